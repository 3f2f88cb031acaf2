"""Shared helpers for the screen_samples tests: crafted raw samples, a checked screen call, quarantine views."""

from __future__ import annotations

import json
from datetime import date, datetime, timedelta

import polars as pl

from contracts.schemas import QUARANTINE_SCHEMA, RAW_SAMPLE_SCHEMA
from transforms.helpers.dcgm_quality import ScreenResult, screen_samples

T0 = datetime(2026, 3, 1, 10)
KEY = "2026-03-01"


def sample(second: int, **values) -> dict:
    """A RAW_SAMPLE_SCHEMA row ``second`` s after 10:00 on n1 GPU 0, job 7."""
    row = dict.fromkeys(RAW_SAMPLE_SCHEMA)
    row.update(
        cluster="c1",
        day=date(2026, 3, 1),
        ts=T0 + timedelta(seconds=second),
        hostname="n1",
        gpu=0,
        uuid="GPU-a",
        model_name="NVIDIA H100 80GB HBM3",
        pci_bus_id="0:1b",
        device="nvidia0",
        hpc_job="7",
        extra_labels="{}",
    )
    row.update(values)
    return row


def screen(rows: list[dict]) -> ScreenResult:
    result = screen_samples(pl.DataFrame(rows, schema=RAW_SAMPLE_SCHEMA), KEY)
    assert result.clean.schema == pl.Schema(RAW_SAMPLE_SCHEMA)
    assert result.quarantine.schema == pl.Schema(QUARANTINE_SCHEMA)
    c = result.counts
    assert c["clean_rows"] == c["total_rows"] - c["duplicate_rows"] + c["mig_device_rows"] == result.clean.height
    assert c["quarantined_values"] == result.quarantine["n_rows"].sum()
    assert c["quarantined_values"] == c["duplicate_values"] + c["sentinel_values"] + c["out_of_range_values"]
    return result


def q_rows(result: ScreenResult) -> list[tuple]:
    return result.quarantine.select("location", "reason", "n_rows").rows()


def payload(result: ScreenResult, i: int = 0) -> dict:
    return json.loads(result.quarantine["payload"][i])


LOC = "hostname=n1 gpu=0 uuid=GPU-a gpu_i_id=- hpc_job=7 field="


def mig(second: int, gi: int, **values) -> dict:
    labels = {"gpu": 1, "uuid": "GPU-m", "gpu_i_id": gi, "gpu_i_profile": "3g.40gb", "hpc_job": str(100 + gi)}
    return sample(second, **{**labels, **values})
