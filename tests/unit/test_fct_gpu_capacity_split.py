"""marts.fct_gpu_capacity_split: every GPU-second of capacity in exactly one state, by precedence."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path

import polars as pl
import pytest

from contracts.capacity_states import DOWN, DOWNTIME_INTERVAL, IDLE, PLANNED_DOWN, RESERVED, STATES
from pipelines.checks.capacity_split import capacity_states_balance_check
from sources.slurm_downtime import EVENTS, RESERVATIONS, read_saved
from transforms.marts.capacity_placement import HELD, host_runs
from transforms.marts.fct_gpu_capacity_split import SCHEMA, STATE_COLUMNS, fct_gpu_capacity_split
from transforms.staging.stg_slurm__downtime import stg_slurm__downtime

START = datetime(2026, 10, 1)
END = datetime(2026, 10, 2)
COLUMNS = list(STATE_COLUMNS.values())


def _hourly(hosts=("n1",), gpus=2, allocated: dict | None = None, fraction: float = 1.0) -> pl.DataFrame:
    rows = []
    for host in hosts:
        for gpu in range(gpus):
            for h in range(24):
                hour = START + timedelta(hours=h)
                rows.append(
                    {"cluster": "c1", "hostname": host, "gpu": gpu, "gpu_i_id": None, "gpu_i_profile": None}
                    | {"gpu_model": "H100", "hour": hour, "capacity_seconds": 3600.0 * fraction}
                    | {"allocated_seconds": (allocated or {}).get((host, gpu, h), 0.0)}
                )
    schema = {**{k: v for k, v in SCHEMA.items() if k in rows[0]}, "allocated_seconds": pl.Float64()}
    return pl.DataFrame(rows, schema=schema)


def _interval(state: str, start: str, end: str, host: str = "n1", gpu: int | None = None) -> dict:
    at = datetime.fromisoformat
    return {"cluster": "c1", "hostname": host, "gpu": gpu, "state": state, "start_ts": at(start), "end_ts": at(end)} | {
        "reason": "r",
        "reported_by": "",
        "source": "slurm_event",
    }


def _split(hourly: pl.DataFrame, *intervals: dict) -> pl.DataFrame:
    return fct_gpu_capacity_split(hourly, pl.DataFrame(list(intervals), schema=DOWNTIME_INTERVAL), START, END)


def _row(split: pl.DataFrame, hour: int, gpu: int = 0, host: str = "n1") -> dict[str, float]:
    row = split.filter(
        (pl.col("hour") == START + timedelta(hours=hour)) & (pl.col("gpu") == gpu) & (pl.col("hostname") == host)
    )
    return {state: row[column][0] for state, column in STATE_COLUMNS.items()}


def _states(**seconds: float) -> dict[str, float]:
    return {state: seconds.get(state, 0.0) for state in STATES}


def test_the_columns_come_from_the_contract() -> None:
    assert COLUMNS == [f"{state}_seconds" for state in STATES]
    assert list(_split(_hourly()).columns) == list(SCHEMA)


def test_without_downtime_capacity_is_allocated_or_idle() -> None:
    split = _split(_hourly(allocated={("n1", 0, 3): 1200.0}))
    assert _row(split, 3) == _states(allocated=1200.0, idle=2400.0)
    assert _row(split, 4) == _states(idle=3600.0)


def test_a_drained_node_is_down_on_every_gpu_for_its_seconds() -> None:
    split = _split(_hourly(), _interval(DOWN, "2026-10-01T10:30:00", "2026-10-01T11:45:00"))
    for gpu in (0, 1):
        assert _row(split, 10, gpu) == _states(down=1800.0, idle=1800.0)
        assert _row(split, 11, gpu) == _states(down=2700.0, idle=900.0)
    assert _row(split, 12) == _states(idle=3600.0)


def test_overlapping_intervals_go_by_precedence_second_by_second() -> None:
    split = _split(
        _hourly(),
        _interval(RESERVED, "2026-10-01T10:00:00", "2026-10-01T11:00:00"),
        _interval(DOWN, "2026-10-01T10:15:00", "2026-10-01T10:45:00"),
        _interval(PLANNED_DOWN, "2026-10-01T10:00:00", "2026-10-01T10:30:00"),
        _interval(DOWN, "2026-10-01T10:20:00", "2026-10-01T10:25:00"),  # inside the maintenance
    )
    assert _row(split, 10) == _states(planned_down=1800.0, down=900.0, reserved=900.0)


def test_an_interval_of_one_gpu_leaves_the_others_alone() -> None:
    split = _split(_hourly(), _interval(DOWN, "2026-10-01T05:00:00", "2026-10-01T06:00:00", gpu=1))
    assert _row(split, 5, gpu=1) == _states(down=3600.0)
    assert _row(split, 5, gpu=0) == _states(idle=3600.0)


def test_mig_instances_count_their_fraction() -> None:
    split = _split(_hourly(fraction=3 / 7), _interval(PLANNED_DOWN, "2026-10-01T00:00:00", "2026-10-01T00:30:00"))
    got = _row(split, 0)
    assert got[PLANNED_DOWN] == pytest.approx(1800.0 * 3 / 7) and got[IDLE] == pytest.approx(1800.0 * 3 / 7)


def test_allocation_wins_and_takes_idle_time_first() -> None:
    allocated = {("n1", 0, 10): 1800.0, ("n1", 0, 11): 3600.0, ("n1", 1, 10): 2700.0}
    split = _split(
        _hourly(allocated=allocated),
        _interval(DOWN, "2026-10-01T10:30:00", "2026-10-01T11:00:00"),  # drained after its job ended
        _interval(RESERVED, "2026-10-01T11:00:00", "2026-10-01T12:00:00"),  # the job ran in its reservation
    )
    assert _row(split, 10, gpu=0) == _states(allocated=1800.0, down=1800.0)
    assert _row(split, 11, gpu=0) == _states(allocated=3600.0)
    assert _row(split, 10, gpu=1) == _states(allocated=2700.0, down=900.0)  # a job finishing on a draining node


def test_intervals_outside_the_period_or_host_are_ignored() -> None:
    split = _split(
        _hourly(hosts=("n1", "n2")),
        _interval(DOWN, "2026-09-30T10:00:00", "2026-10-01T01:00:00"),
        _interval(DOWN, "2026-10-02T00:00:00", "2026-10-02T05:00:00"),
    )
    assert _row(split, 0) == _states(down=3600.0) and _row(split, 0, host="n2") == _states(idle=3600.0)
    assert split.select(pl.col(STATE_COLUMNS[DOWN]).sum()).item() == 2 * 3600.0


def test_the_states_sum_to_capacity_and_the_check_says_so() -> None:
    split = _split(
        _hourly(allocated={("n1", 0, h): 1000.0 for h in range(24)}),
        _interval(PLANNED_DOWN, "2026-10-01T02:10:00", "2026-10-01T07:55:13"),
        _interval(DOWN, "2026-10-01T01:00:00", "2026-10-01T04:00:00", gpu=0),
        _interval(RESERVED, "2026-10-01T00:00:00", "2026-10-02T00:00:00"),
    )
    total = split.select(pl.sum_horizontal(COLUMNS) - pl.col("capacity_seconds")).to_series()
    assert total.abs().max() < 1e-6
    assert split.select(pl.min_horizontal(COLUMNS).min()).item() >= 0
    assert capacity_states_balance_check(split, ["marts", "fct_gpu_capacity_split"]).passed


def test_allocation_beyond_capacity_fails_the_check_naming_the_row() -> None:
    split = _split(_hourly(allocated={("n1", 1, 7): 4000.0}))
    check = capacity_states_balance_check(split, ["marts", "fct_gpu_capacity_split"])
    assert not check.passed
    assert "cluster 'c1' host 'n1' GPU 1" in check.description and "2026-10-01 07:00:00" in check.description


def test_the_recorded_slurm_drain_and_reservations_split_the_recorded_hour() -> None:
    fixtures = Path(__file__).parents[1] / "fixtures" / "slurm_downtime"
    done = json.loads((fixtures / "real_22.05_downtime.json").read_text())
    began = datetime.fromisoformat(done["began"])
    day = began.replace(hour=0, minute=0, second=0)
    intervals, _ = stg_slurm__downtime(
        read_saved(fixtures / "real_22.05_events.txt", EVENTS)[0],
        read_saved(fixtures / "real_22.05_reservations.txt", RESERVATIONS)[0],
        cluster="c1",
        slurm_cluster=done["cluster"],
        window=(day, day + timedelta(days=1)),
        as_of=datetime.fromisoformat(done["ended"]) + timedelta(minutes=30),
    )
    hourly = _hourly(hosts=(done["node"],)).with_columns(hour=pl.col("hour") - START + day)
    split = fct_gpu_capacity_split(hourly, intervals, day, day + timedelta(days=1))
    row = split.filter(pl.col("hour") == began.replace(minute=0, second=0), pl.col("gpu") == 0).row(0, named=True)
    seconds = {column: row[column] for column in COLUMNS}
    open_end = datetime.fromisoformat(done["ended"]) + timedelta(minutes=30)
    hour_end = began.replace(minute=0, second=0) + timedelta(hours=1)
    drained = (datetime.fromisoformat(done["drained"][1]) - datetime.fromisoformat(done["drained"][0])).seconds
    maint = 60  # the maintenance reservation's minute wins over the open drain it overlaps
    open_drain = (min(open_end, hour_end) - datetime.fromisoformat(done["open_drain_start"])).seconds - maint
    assert seconds[STATE_COLUMNS[PLANNED_DOWN]] == maint
    assert seconds[STATE_COLUMNS[DOWN]] == drained + open_drain
    assert sum(seconds.values()) == 3600.0


def _held(*runs: tuple[str, str, str, float]) -> pl.DataFrame:
    return pl.DataFrame(
        [("c1", host, datetime.fromisoformat(a), datetime.fromisoformat(b), gpus) for host, a, b, gpus in runs],
        schema=HELD,
        orient="row",
    )


def test_the_runs_times_place_allocation_inside_or_outside_the_intervals() -> None:
    """A whole-host job 10:15-10:45 across a drain from 10:30: 15 min of it inside the drain."""
    hourly = _hourly(allocated={("n1", 0, 10): 1800.0, ("n1", 1, 10): 1800.0})
    drain = _interval(DOWN, "2026-10-01T10:30:00", "2026-10-01T11:00:00")
    held = _held(("n1", "2026-10-01T10:15:00", "2026-10-01T10:45:00", 2.0))
    split = fct_gpu_capacity_split(hourly, pl.DataFrame([drain], schema=DOWNTIME_INTERVAL), START, END, held)
    for gpu in (0, 1):
        assert _row(split, 10, gpu) == _states(allocated=1800.0, down=900.0, idle=900.0)
    without = _split(hourly, drain)  # no run times: allocation takes the idle time first
    assert _row(without, 10) == _states(allocated=1800.0, down=1800.0)


def test_a_job_in_its_reservation_uses_reserved_time_and_runs_of_other_hosts_do_not_count() -> None:
    hourly = _hourly(hosts=("n1", "n2"), allocated={("n1", 0, 3): 1200.0})
    resv = _interval(RESERVED, "2026-10-01T03:00:00", "2026-10-01T03:30:00")
    held = _held(
        ("n1", "2026-10-01T03:10:00", "2026-10-01T03:30:00", 1.0),
        ("n2", "2026-10-01T02:00:00", "2026-10-01T05:00:00", 2.0),
    )
    split = fct_gpu_capacity_split(hourly, pl.DataFrame([resv], schema=DOWNTIME_INTERVAL), START, END, held)
    assert _row(split, 3) == _states(allocated=1200.0, reserved=600.0, idle=1800.0)
    assert _row(split, 3, gpu=1) == _states(reserved=1800.0, idle=1800.0)  # the other GPU: spread by fct_gpu_hourly


def test_host_runs_spread_a_run_over_its_hosts_and_place_pods_on_their_node() -> None:
    jobs = pl.DataFrame(
        {
            "cluster": ["c1", "c1"],
            "hosts": [["n1", "n2"], ["n1"]],
            "gpus": [4.0, 1.0],
            "start_time": [datetime(2026, 9, 30, 23), None],
            "end_time": [None, None],
        }
    )
    pods = pl.DataFrame(
        {
            "cluster": ["c1"],
            "node": ["n3"],
            "gpus": [3 / 7],
            "start_time": [START],
            "end_time": [START + timedelta(hours=1)],
        }
    )
    held = host_runs(jobs, pods, START, END).sort("hostname")
    assert held["hostname"].to_list() == ["n1", "n2", "n3"]
    assert held["host_gpus"].to_list() == [2.0, 2.0, 3 / 7]
    assert held["run_start"][0] == START and held["run_end"][0] == END  # clipped to the period, open to its end
