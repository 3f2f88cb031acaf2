"""Slurm node events and reservations -> downtime intervals of a day, on outputs recorded from the
real Slurm of tests/slurm_harness (tests/fixtures/slurm_downtime, re-recorded by
``python -m tests.slurm_harness.downtime_fixtures``)."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path

import polars as pl
import pytest

from config.cluster import SlurmConfig
from contracts.capacity_states import DOWN, DOWNTIME_INTERVAL, INTERVAL_SOURCES, INTERVAL_STATES, PLANNED_DOWN, RESERVED
from sources.slurm_downtime import EVENTS, RESERVATIONS, DowntimeReadError, parse_records, read_downtime, read_saved
from transforms.staging.stg_slurm__downtime import stg_slurm__downtime

FIXTURES = Path(__file__).parents[1] / "fixtures" / "slurm_downtime"
DONE = json.loads((FIXTURES / "real_22.05_downtime.json").read_text())
T = "%Y-%m-%dT%H:%M:%S"


def _t(text: str) -> datetime:
    return datetime.strptime(text, T)


DAY = _t(DONE["began"]).replace(hour=0, minute=0, second=0)
WINDOW = (DAY, DAY + timedelta(days=1))
AS_OF = _t(DONE["ended"]) + timedelta(minutes=10)


def _config(**files: str) -> SlurmConfig:
    keys = {"events_file": str(FIXTURES / "real_22.05_events.txt")} | files
    return SlurmConfig(sacct_file="x.txt", slurm_cluster=DONE["cluster"], **keys)


def _stage(events: pl.DataFrame, reservations: pl.DataFrame, window=WINDOW, as_of=AS_OF, slurm_cluster=None):
    return stg_slurm__downtime(
        events,
        reservations,
        cluster="c1",
        slurm_cluster=slurm_cluster or DONE["cluster"],
        window=window,
        as_of=as_of,
    )


def _recorded() -> tuple[pl.DataFrame, pl.DataFrame]:
    events, bad_events = read_saved(FIXTURES / "real_22.05_events.txt", EVENTS)
    reservations, bad_resv = read_saved(FIXTURES / "real_22.05_reservations.txt", RESERVATIONS)
    assert bad_events.is_empty() and bad_resv.is_empty()
    return events, reservations


def test_recorded_drain_reservations_and_open_drain_become_intervals_of_the_day() -> None:
    intervals, bad = _stage(*_recorded())
    assert bad.is_empty()
    assert dict(intervals.schema) == DOWNTIME_INTERVAL
    rows = intervals.sort("start_ts", "state").to_dicts()
    drain, open_drain, maint, team = (
        next(r for r in rows if r["reason"] == DONE["drain_reason"]),
        next(r for r in rows if r["reason"] == DONE["open_reason"]),
        next(r for r in rows if r["reason"] == DONE["maint_name"]),
        next(r for r in rows if r["reason"] == DONE["team_name"]),
    )
    assert (drain["state"], drain["source"], drain["reported_by"]) == (DOWN, "slurm_event", "root")
    assert [drain["start_ts"], drain["end_ts"]] == [_t(t) for t in DONE["drained"]]
    assert (open_drain["start_ts"], open_drain["end_ts"]) == (_t(DONE["open_drain_start"]), AS_OF)
    assert (maint["state"], maint["source"]) == (PLANNED_DOWN, "slurm_reservation")
    assert [maint["start_ts"], maint["end_ts"]] == [_t(t) for t in DONE["maint"]]
    assert (team["state"], [team["start_ts"], team["end_ts"]]) == (RESERVED, [_t(t) for t in DONE["team"]])
    assert {r["hostname"] for r in rows} == {DONE["node"]} and all(r["gpu"] is None for r in rows)
    assert set(intervals["state"]) <= set(INTERVAL_STATES) and set(intervals["source"]) <= set(INTERVAL_SOURCES)


def test_intervals_are_clipped_to_the_day_and_an_open_event_to_the_read() -> None:
    events, reservations = _recorded()
    maint_start = _t(DONE["maint"][0])
    window = (maint_start + timedelta(seconds=30), maint_start + timedelta(hours=2))
    intervals, _ = _stage(events, reservations, window=window, as_of=window[1] + timedelta(days=3))
    by_reason = {r["reason"]: r for r in intervals.to_dicts()}
    assert DONE["drain_reason"] not in by_reason  # over before the window
    assert by_reason[DONE["maint_name"]]["start_ts"] == window[0]
    assert by_reason[DONE["open_reason"]]["end_ts"] == window[1]  # still open: to the window's end
    assert (intervals["end_ts"] <= window[1]).all() and (intervals["start_ts"] >= window[0]).all()


def test_a_host_list_is_one_interval_per_host_and_other_clusters_are_left_out() -> None:
    events = pl.DataFrame(
        {
            "slurm_cluster": ["cardhours-test", "other"],
            "node_list": ["gpu-[01-03,07]", "gpu-01"],
            "start_time": ["2026-12-02T01:00:00"] * 2,
            "end_time": ["2026-12-02T02:00:00"] * 2,
            "node_state": ["DOWN*", "DOWN"],
            "reported_by": ["slurm(64030)", "root(0)"],
            "reason": ["Not responding", "x"],
            "location": ["f:2", "f:3"],
        }
    )
    intervals, bad = _stage(events, read_saved(FIXTURES / "real_22.05_reservations.txt", RESERVATIONS)[0][:0])
    assert bad.is_empty()
    assert intervals["hostname"].to_list() == ["gpu-01", "gpu-02", "gpu-03", "gpu-07"]
    assert set(intervals["reported_by"]) == {"slurm"}


def test_bad_lines_and_values_are_quarantined_with_their_reason(tmp_path: Path) -> None:
    good = (FIXTURES / "real_22.05_events.txt").read_text().splitlines()
    broken = [
        good[0],
        good[1],
        "cardhours-test|localhost|2026-12-02T15:32:57",  # cut short
        "cardhours-test|localhost|yesterday|2026-12-02T16:00:00|DOWN|root(0)|x",
        "cardhours-test|gpu-[05-03]|2026-12-02T15:00:00|2026-12-02T16:00:00|DOWN|root(0)|x",
        "cardhours-test|localhost|2026-12-02T15:00:00|2026-12-02T14:00:00|DOWN|root(0)|x",
    ]
    path = tmp_path / "events.txt"
    path.write_text("\n".join(broken) + "\n")
    events, bad_lines = read_saved(path, EVENTS)
    intervals, bad_rows = _stage(events, _recorded()[1][:0])
    assert intervals.height == 1
    assert bad_lines["reason"].to_list() == ["SHORT_LINE: line has 3 fields, expected 7"]
    assert bad_lines["location"].to_list() == [f"{path}:3"]
    reasons = bad_rows["reason"].to_list()
    assert reasons[0].startswith("UNPARSABLE_FIELD: Start 'yesterday'")
    assert reasons[1].startswith("UNPARSABLE_FIELD: node list 'gpu-[05-03]'")
    assert reasons[2].startswith("END_BEFORE_START: End 2026-12-02T14:00:00")
    assert bad_rows["location"].to_list() == [f"{path}:{n}" for n in (4, 5, 6)]
    assert set(bad_rows["source"]) == {"slurm_downtime"}


def test_a_header_without_a_column_is_refused_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "resv.txt"
    path.write_text("Cluster|Name|TimeStart|TimeEnd|NodeName|Flags\n")
    with pytest.raises(DowntimeReadError, match="column ID missing from the header"):
        read_saved(path, RESERVATIONS)


def test_a_header_with_more_columns_reads_the_named_ones(tmp_path: Path) -> None:
    """A file saved with more columns than cardhours asks for (the sreport comparison's own
    format): read by name, the rest ignored; a '|' in a Reason that is not last is quarantined."""
    path = tmp_path / "events.txt"
    header = "Cluster|Cluster Nodes|NodeName|Event|TimeStart|TimeEnd|State|Reason|User|TRES"
    good = "c|||Node|2026-12-02T15:39:20|2026-12-02T15:39:26|DRAIN|fan|root(0)|cpu=32"
    piped = "c|||Node|2026-12-02T15:40:20|2026-12-02T15:40:26|DRAIN|fan|psu|root(0)|cpu=32"
    path.write_text(f"{header}\n{good.replace('|||', '||n1|')}\n{piped.replace('|||', '||n2|')}\n")
    rows, bad = read_saved(path, EVENTS)
    first = ("c", "n1", "2026-12-02T15:39:20", "2026-12-02T15:39:26", "DRAIN", "root(0)", "fan")
    assert rows.drop("location").row(0) == first
    assert bad["location"].to_list() == [f"{path}:3"] and bad["reason"][0].startswith("SHORT_LINE")


def test_command_output_without_header_reads_like_the_saved_file() -> None:
    text = (FIXTURES / "real_22.05_events.txt").read_text()
    rows, bad = parse_records(
        text.split("\n", 1)[1], EVENTS, source="sacctmgr", cluster="c1", day_key="d", has_header=False
    )
    assert bad.is_empty()
    assert rows.drop("location").equals(read_saved(FIXTURES / "real_22.05_events.txt", EVENTS)[0].drop("location"))


def test_file_mode_reads_the_files_named_and_no_other() -> None:
    events, reservations, bad = read_downtime(_config(), "c1", *WINDOW)
    assert events.height == 2 and reservations.is_empty() and bad.is_empty()


def test_config_takes_one_mode_for_downtime() -> None:
    assert _config().reads_downtime
    assert not SlurmConfig(sacct_file="x.txt").reads_downtime
    with pytest.raises(ValueError, match="sacctmgr_command .* or events_file / reservations_file"):
        SlurmConfig(sacct_command="sacct", sacctmgr_command="sacctmgr", events_file="e.txt")


def test_a_column_named_twice_in_the_header_is_refused_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "resv.txt"
    path.write_text("Cluster|Name|ID|TimeStart|TimeEnd|NodeName|Flags|NodeName\n")
    with pytest.raises(DowntimeReadError, match=r"column NodeName appears 2 times in the header \(columns 6, 8\)"):
        read_saved(path, RESERVATIONS)
