"""GPUs whose DCGM samples stop while their host's other GPUs report, as downtime intervals."""

from __future__ import annotations

from datetime import datetime, timedelta

import polars as pl

from contracts.capacity_states import DOWNTIME_INTERVAL
from transforms.staging.stg_dcgm__gpu_dropout import stg_dcgm__gpu_dropout

T0 = datetime(2026, 3, 2)
STEP = 60
END = T0 + timedelta(days=1)


def _at(seconds: int) -> datetime:
    return T0 + timedelta(seconds=seconds)


def _present(host: str, gpus: list[int], start: int, end: int, skip: dict[int, range] | None = None) -> list[tuple]:
    """(host, gpu, ts) for every scrape in [start, end) except the gpu's ``skip`` seconds."""
    skip = skip or {}
    return [(host, g, _at(t)) for t in range(start, end, STEP) for g in gpus if t not in skip.get(g, range(0))]


def _frame(rows: list[tuple]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema={"hostname": pl.String, "gpu": pl.Int16, "ts": pl.Datetime("us")}, orient="row")


DECLARED = pl.DataFrame(
    {"cluster": ["c"] * 4, "hostname": ["h1", "h1", "h1", "h2"], "gpu": [0, 1, 2, 0]},
    schema_overrides={"gpu": pl.Int16},
)


def _dropout(rows: list[tuple]) -> pl.DataFrame:
    return stg_dcgm__gpu_dropout(_frame(rows), DECLARED, "c", T0, END, STEP)


def test_a_gpu_silent_while_its_host_reports_is_down() -> None:
    rows = _present("h1", [0, 1, 2], 0, 3600, skip={1: range(600, 1200), 2: range(300, 360)})  # gpu 2: one scrape
    got = _dropout(rows)
    assert got.schema == pl.Schema(DOWNTIME_INTERVAL)
    assert got.select("hostname", "gpu", "start_ts", "end_ts").rows() == [("h1", 1, _at(600), _at(1200))]
    assert got.row(0, named=True) | {"start_ts": None, "end_ts": None} == {
        "cluster": "c",
        "hostname": "h1",
        "gpu": 1,
        "state": "down",
        "start_ts": None,
        "end_ts": None,
        "reason": "no samples while the host reported",
        "reported_by": "",
        "source": "dcgm_dropout",
    }


def test_a_gpu_gone_for_good_and_a_declared_gpu_never_seen() -> None:
    rows = _present("h1", [0, 1], 0, 86400, skip={1: range(43200, 86400)})
    got = _dropout(rows)
    # gpu 1 from its first missing scrape to the day's end; gpu 2 (declared) all day
    assert got.select("gpu", "start_ts", "end_ts").rows() == [(1, _at(43200), END), (2, T0, END)]


def test_a_silent_host_is_not_a_dropout() -> None:
    # the host's exporter is down 01:00-02:00: every GPU missing, not a dropout; h2 never reports
    rows = _present("h1", [0, 1, 2], 0, 3600) + _present("h1", [0, 1, 2], 7200, 10800)
    assert _dropout(rows).is_empty()
