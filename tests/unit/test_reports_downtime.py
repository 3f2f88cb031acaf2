"""The review's downtime section: availability per cluster and downtime per node and reason."""

from __future__ import annotations

from datetime import datetime

import polars as pl

from contracts.capacity_states import DOWNTIME_INTERVAL, STATES
from reports.sections.downtime import availability_frame, downtime_by_node, downtime_section


def _states() -> pl.DataFrame:
    hours = {"allocated": 500.0, "down": 40.0, "planned_down": 60.0, "reserved": 100.0, "idle": 300.0}
    assert set(hours) == set(STATES)
    return pl.DataFrame(
        [{"cluster": "c1", "capacity_gpu_hours": 1000.0} | {f"{s}_gpu_hours": h for s, h in hours.items()}]
    )


def _intervals() -> pl.DataFrame:
    rows = [
        ("n1", "down", datetime(2026, 10, 1, 0), datetime(2026, 10, 1, 6), "bad <gpu>", "root"),
        ("n1", "down", datetime(2026, 10, 2, 0), datetime(2026, 10, 2, 2), "bad <gpu>", "alice"),
        ("n2", "planned_down", datetime(2026, 10, 3, 0), datetime(2026, 10, 3, 1), "maint-bios", ""),
    ]
    return pl.DataFrame(
        [
            {"cluster": "c1", "hostname": h, "gpu": None, "state": s, "start_ts": a, "end_ts": b, "reason": r}
            | {"reported_by": by, "source": "slurm_event" if s == "down" else "slurm_reservation"}
            for h, s, a, b, r, by in rows
        ],
        schema=DOWNTIME_INTERVAL,
    )


def test_availability_is_capacity_neither_down_nor_planned_down() -> None:
    assert availability_frame(_states())["availability"][0] == 0.9


def test_downtime_is_summed_per_node_state_and_reason_most_hours_first() -> None:
    nodes = downtime_by_node(_intervals()).to_dicts()
    assert [(n["hostname"], n["gpus"], n["intervals"], n["hours"], n["reported_by"]) for n in nodes] == [
        ("n1", "all", 2, 8.0, "alice, root"),
        ("n2", "all", 1, 1.0, ""),
    ]


def test_section_escapes_reasons_and_is_left_out_without_a_split() -> None:
    html = str(downtime_section(_states(), _intervals()).render())
    assert "bad &lt;gpu&gt;" in html and "bad <gpu>" not in html and "90.0%" in html
    assert downtime_section(_states().clear(), _intervals()) is None
