"""Kubernetes node conditions as downtime intervals: not Ready and cordoned, one step of scrape
error at each end, merged per node and reason, clipped to the day, in DOWNTIME_INTERVAL."""

from __future__ import annotations

from datetime import timedelta

import polars as pl

from contracts.capacity_states import DOWNTIME_INTERVAL, INTERVAL_SOURCES, INTERVAL_STATES
from tests.unit.test_kube_landing import T0
from tests.unit.test_kube_node_capacity import STEP, _runs
from transforms.helpers.intervals import merge_intervals
from transforms.staging.stg_kube__node_downtime import stg_kube__node_downtime

COND = "kube_node_status_condition"
UNSCHED = "kube_node_spec_unschedulable"
READY_TRUE = {"condition": "Ready", "status": "true"}


def _down(runs: pl.DataFrame, hours: int = 24) -> pl.DataFrame:
    return stg_kube__node_downtime(
        runs, T0, T0 + timedelta(hours=hours), STEP, condition_metric=COND, unschedulable_metric=UNSCHED
    )


def _at(seconds: int):
    return T0 + timedelta(seconds=seconds)


def test_not_ready_and_cordoned_intervals() -> None:
    runs = _runs(
        [
            (COND, "n1", READY_TRUE, 1, 0, 3540),
            (COND, "n1", READY_TRUE, 0, 3600, 5340),  # NotReady 01:00 .. first Ready scrape 01:30
            (COND, "n1", READY_TRUE, 1, 5400, 86340),
            (COND, "n1", {"condition": "Ready", "status": "false"}, 1, 3600, 5340),  # not read: status true only
            (COND, "n1", {"condition": "MemoryPressure", "status": "true"}, 0, 0, 86340),
            (UNSCHED, "n2", {}, 0, 0, 7140),
            (UNSCHED, "n2", {}, 1, 7200, 86340),  # cordoned from 02:00 to the day's end
        ]
    )
    got = _down(runs)
    assert got.schema == pl.Schema(DOWNTIME_INTERVAL)
    assert got.select("hostname", "gpu", "start_ts", "end_ts", "reason").rows() == [
        ("n1", None, _at(3600), _at(5400), "NotReady"),
        ("n2", None, _at(7200), _at(86400), "cordoned"),
    ]
    assert set(got["state"]) <= set(INTERVAL_STATES) and set(got["source"]) <= set(INTERVAL_SOURCES)
    assert (got["reported_by"] == "").all()


def test_intervals_are_clipped_to_the_day_and_merged() -> None:
    runs = _runs(
        [
            (UNSCHED, "n1", {}, 1, -600, 1140),  # a run starting before the day
            (UNSCHED, "n1", {}, 1, 1200, 2340),  # a second series of the same node (another instance)
            (COND, "n1", READY_TRUE, 0, 86000, 90000),  # beyond the day
        ]
    )
    got = _down(runs)
    assert got.select("start_ts", "end_ts", "reason").rows() == [
        (_at(0), _at(2400), "cordoned"),
        (_at(86000), _at(86400), "NotReady"),
    ]
    assert _down(runs.clear()).is_empty()


def test_merge_keeps_apart_intervals_with_a_gap() -> None:
    frame = pl.DataFrame(
        {
            "k": ["a", "a", "a", "b"],
            "start_ts": [_at(0), _at(50), _at(200), _at(10)],
            "end_ts": [_at(100), _at(150), _at(300), _at(20)],
        }
    )
    assert merge_intervals(frame, ["k"]).rows() == [
        ("a", _at(0), _at(150)),
        ("a", _at(200), _at(300)),
        ("b", _at(10), _at(20)),
    ]
