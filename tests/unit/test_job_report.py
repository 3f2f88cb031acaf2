"""reports/job_report.py and job_report_text.py on crafted frames: the kind of job, the per-GPU
lines (MIG fractions, best signal named), totals weighted by GPU-hours, flags in the registry's
order, JSON-safe output and data printed as text, never as rich markup."""

from __future__ import annotations

import json
from datetime import date, datetime

import polars as pl
import pytest
from rich.console import Console

from config import INVENTORY_SCHEMA
from reports.job_gpus import GPU_SCHEMA
from reports.job_report import JobInputs, job_kind, job_report
from reports.job_report_text import render_job_report
from transforms.marts.fct_job_flags import SCHEMA as FLAG_SCHEMA
from transforms.marts.fct_job_usage import SCHEMA as USAGE_SCHEMA

MONTH = date(2026, 10, 1)
T0 = datetime(2026, 10, 3, 8)


def usage(**fields) -> dict:
    row = dict.fromkeys(USAGE_SCHEMA)
    row.update(cluster="c1", scheduler="slurm", month=MONTH, start_time=T0, end_time=datetime(2026, 10, 3, 10))
    row.update(gpus=1.0, elapsed_seconds=7200, gpu_hours=2.0, state="COMPLETED", user_name="ann", hosts="n1")
    row.update(fields)
    row["job_id_raw"] = row["job_id_raw"] or row["job_id"]
    return row


def runs(*rows: dict) -> pl.DataFrame:
    return pl.DataFrame(list(rows), schema=USAGE_SCHEMA)


def gpu_rows(*rows: dict) -> pl.DataFrame:
    base = dict(cluster="c1", start_time=T0, month=MONTH, gpu_i_id=None, gpu_i_profile=None, sm_active_n=0.0)
    base.update(gr_engine_active_n=0.0, fb_used_mib_max=100.0, fb_used_mib_sum=50.0, fb_used_mib_n=1.0)
    return pl.DataFrame([{**base, **row} for row in rows])


INVENTORY = pl.DataFrame(
    [
        ("c1", "n1", 0, "H100", "H100", 81559, None, None, 1.0, None, None),
        ("c1", "n2", 0, "H100", "H100", 81559, None, None, 1.0, None, None),
        ("c1", "m1", 0, "A100", "A100", 40960, 2, "3g.40gb", 3 / 7, None, None),
    ],
    schema=INVENTORY_SCHEMA,
    orient="row",
)


def inputs(job_runs: pl.DataFrame, gpus: pl.DataFrame, flags: pl.DataFrame | None = None) -> JobInputs:
    charges = pl.DataFrame(
        [{"job_id_raw": r["job_id_raw"], "start_time": r["start_time"], "month": MONTH, "cost": 1.5}
         for r in job_runs.iter_rows(named=True)]
    )  # fmt: skip
    return JobInputs(
        job_runs, flags if flags is not None else pl.DataFrame(schema=FLAG_SCHEMA), charges, gpus, INVENTORY,
        {"c1": 30}, "EUR",
    )  # fmt: skip


def test_the_kind_of_job_is_named() -> None:
    array = runs(usage(job_id="7_1", job_id_raw="8", array_job_id="7", array_task_id="1"),
                 usage(job_id="7_2", job_id_raw="9", array_job_id="7", array_task_id="2"))  # fmt: skip
    assert job_kind("7", array) == "Slurm array job 7: 2 tasks, 2 runs"
    assert job_kind("7_1", array.head(1)) == "Slurm array task 1 of array 7"
    requeued = runs(usage(job_id="5"), usage(job_id="5", start_time=datetime(2026, 10, 4)))
    assert job_kind("5", requeued) == "Slurm job, requeued: 2 runs"
    gang = runs(usage(job_id="ns/PodGroup/vc-1", scheduler="kubernetes", job_name="vc-1"))
    assert job_kind("vc-1", gang).startswith("Kubernetes PodGroup vc-1 in namespace ns: a gang")
    kueue = runs(usage(job_id="ns/PyTorchJob/pt", scheduler="kubernetes", partition_name="research"))
    assert job_kind("pt", kueue).endswith("admitted through the Kueue LocalQueue research")
    assert job_kind("ns/p", runs(usage(job_id="ns/p", scheduler="kubernetes"))) == "Kubernetes pod p in namespace ns"


def test_per_gpu_lines_and_totals() -> None:
    measures = dict(utilization=0.5, active_gpu_hours=2.0, idle_gpu_hours=2.0, utilization_signal="sm_active")
    job = runs(usage(job_id="1", gpus=2.0, gpu_hours=4.0, hosts="n1,n2", energy_kwh=1.0, **measures))
    gpus = gpu_rows(
        dict(job_id_raw="1", hostname="n1", gpu=0, samples=240.0, best_sum=180.0, best_n=240.0, sm_active_n=240.0,
             energy_j=1.8e6),
        dict(job_id_raw="1", hostname="n2", gpu=0, samples=240.0, best_sum=60.0, best_n=240.0, gr_engine_active_n=240.0,
             energy_j=1.8e6),
    )  # fmt: skip
    report = job_report("1", inputs(job, gpus))
    lines = report["gpus"]
    assert [(g["hostname"], g["gpu_hours"], g["utilization"], g["utilization_signal"]) for g in lines] == [
        ("n1", 2.0, 0.75, "sm_active"),
        ("n2", 2.0, 0.25, "gr_engine_active"),
    ]
    assert (lines[0]["energy_kwh"], lines[0]["mean_power_w"]) == pytest.approx((0.5, 250.0))
    assert lines[0]["card_memory_mib"] == 81559.0
    totals = report["totals"]
    assert (totals["gpu_hours"], totals["utilization"], totals["cost"], totals["mean_power_w"]) == pytest.approx(
        (4.0, 0.5, 1.5, 250.0)
    )
    assert set(GPU_SCHEMA) == set(lines[0])
    json.dumps(report)  # JSON-safe: times as ISO text


def test_a_mig_slice_counts_as_its_fraction_and_its_own_memory() -> None:
    job = runs(usage(job_id="2", gpus=3 / 7, gpu_hours=6 / 7, hosts="m1", gpu_model="A100 3g.40gb"))
    gpus = gpu_rows(dict(job_id_raw="2", hostname="m1", gpu=0, gpu_i_id=2, gpu_i_profile="3g.40gb", samples=240.0,
                         best_sum=0.0, best_n=0.0, energy_j=0.0))  # fmt: skip
    (line,) = job_report("2", inputs(job, gpus))["gpus"]
    assert line["mig_profile"] == "3g.40gb" and abs(line["gpu_hours"] - 6 / 7) < 1e-9
    assert line["card_memory_mib"] == 40960.0
    assert line["utilization"] is None and line["utilization_signal"] is None  # no signal: not 0


def test_flags_most_severe_first_with_the_registry_summary() -> None:
    job = runs(usage(job_id="3"))
    flag = dict.fromkeys(FLAG_SCHEMA) | dict(cluster="c1", job_id="3", job_id_raw="3", start_time=T0, month=MONTH)
    flags = pl.DataFrame(
        [flag | dict(reason="IDLE_TAIL", severity="medium", wasted_gpu_hours=1.0),
         flag | dict(reason="ZERO_UTIL", severity="high", wasted_gpu_hours=0.5)],
        schema=FLAG_SCHEMA,
    )  # fmt: skip
    report = job_report("3", inputs(job, gpu_rows(), flags))
    assert [f["reason"] for f in report["flags"]] == ["ZERO_UTIL", "IDLE_TAIL"]
    assert report["flags"][0]["summary"] == "the GPUs did no work"


def test_data_is_printed_as_text_not_markup() -> None:
    job = runs(usage(job_id="4", job_name="[red]boom[/red]", user_name="[bold]x"))
    console = Console(record=True, width=140)
    console.print(render_job_report(job_report("4", inputs(job, pl.DataFrame(schema=GPU_SCHEMA)))))
    text = console.export_text()
    assert "[red]boom[/red]" in text and "[bold]x" in text
    assert "Flags: none" in text and "cost" in text and "1.50 EUR" in text


def test_the_terminal_counts_tiny_host_shared_gpu_lines_instead_of_listing_them() -> None:
    job = runs(usage(job_id="6", gpus=1.0, gpu_hours=2.0, utilization=0.5, active_gpu_hours=1.0, idle_gpu_hours=1.0))
    gpus = gpu_rows(
        dict(job_id_raw="6", hostname="n1", gpu=0, samples=240.0, best_sum=120.0, best_n=240.0, energy_j=1.0),
        dict(job_id_raw="6", hostname="n2", gpu=0, samples=0.5, best_sum=0.0, best_n=0.5, energy_j=0.0),
    )
    report = job_report("6", inputs(job, gpus))
    assert len(report["gpus"]) == 2  # --json keeps every line
    console = Console(record=True, width=160)
    console.print(render_job_report(report))
    text = console.export_text()
    assert "n1" in text and "n2" not in text and "1 more GPU lines" in text
