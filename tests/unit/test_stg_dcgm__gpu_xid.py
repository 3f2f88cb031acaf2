"""The XID rule: a critical last XID is downtime until a reset, a non-critical value or the
first hour with real activity; informational XIDs never; values that are no XID quarantined."""

from __future__ import annotations

import math
from datetime import datetime, timedelta

import polars as pl

from contracts.capacity_states import DCGM_XID, DOWN, DOWNTIME_INTERVAL
from contracts.schemas import QUARANTINE_SCHEMA
from contracts.xid import CRITICAL_XIDS, INFORMATIONAL_XIDS
from sources.dcgm_xid import XID_VALUES
from transforms.staging.stg_dcgm__gpu_xid import (
    UNREADABLE_GPU,
    UNREADABLE_VALUE,
    quarantine_xid,
    screen_xid,
    stg_dcgm__gpu_xid,
)

T0 = datetime(2026, 3, 2)
STEP = 60
END = T0 + timedelta(days=1)
NO_ACTIVITY = pl.DataFrame(schema={"hostname": pl.String, "gpu": pl.Int16, "hour": pl.Datetime("us")})


def _at(minutes: int) -> datetime:
    return T0 + timedelta(minutes=minutes)


def _values(series: dict[tuple[str, str], list[tuple[int, int, float]]]) -> pl.DataFrame:
    """(host, gpu label) -> [(from minute, to minute, value)]: a point per STEP in each span."""
    rows = [
        (host, gpu, _at(m), value)
        for (host, gpu), spans in series.items()
        for a, b, value in spans
        for m in range(a, b)
    ]
    return pl.DataFrame(rows, schema=XID_VALUES, orient="row")


def _xid(values: pl.DataFrame, active: pl.DataFrame = NO_ACTIVITY, carried: pl.DataFrame | None = None) -> list[tuple]:
    codes, _ = screen_xid(values)
    got = stg_dcgm__gpu_xid(codes, active, "c", T0, END, STEP, carried)
    assert got.schema == pl.Schema(DOWNTIME_INTERVAL)
    assert set(got["state"]) <= {DOWN} and set(got["source"]) <= {DCGM_XID}
    return got.select("hostname", "gpu", "start_ts", "end_ts", "reason").rows()


def _active(host: str, gpu: int, hours: list[int]) -> pl.DataFrame:
    rows = [(host, gpu, T0 + timedelta(hours=h)) for h in hours]
    return pl.DataFrame(rows, schema=NO_ACTIVITY.schema, orient="row")


def test_a_critical_xid_is_down_until_the_value_goes_back_to_zero() -> None:
    values = _values({("h1", "0"): [(0, 600, 0.0), (600, 700, 79.0), (700, 800, 0.0)]})
    assert _xid(values) == [("h1", 0, _at(600), _at(700), CRITICAL_XIDS[79])]


def test_a_gap_in_the_filtered_read_ends_the_interval() -> None:
    # the Prometheus read returns only critical points: 0 and informational values are gaps
    values = _values({("h1", "0"): [(100, 160, 48.0), (400, 460, 48.0)]})
    assert _xid(values) == [
        ("h1", 0, _at(100), _at(160), CRITICAL_XIDS[48]),
        ("h1", 0, _at(400), _at(460), CRITICAL_XIDS[48]),
    ]


def test_a_sticky_value_ends_at_the_first_hour_with_real_activity() -> None:
    values = _values({("h1", "1"): [(0, 1440, 95.0)]})  # sticky all day: no reset
    assert _xid(values, _active("h1", 1, [5, 9])) == [("h1", 1, _at(0), _at(300), CRITICAL_XIDS[95])]
    # another GPU's activity does not end it
    assert _xid(values, _active("h1", 0, [5])) == [("h1", 1, _at(0), END, CRITICAL_XIDS[95])]


def test_activity_in_the_hour_the_error_came_counts_only_from_the_next_hour() -> None:
    values = _values({("h1", "0"): [(0, 610, 0.0), (610, 1440, 79.0)]})  # 10:10 onwards
    assert _xid(values, _active("h1", 0, [10, 12])) == [("h1", 0, _at(610), _at(720), CRITICAL_XIDS[79])]


def test_a_change_between_critical_xids_starts_a_new_interval() -> None:
    values = _values({("h1", "0"): [(60, 120, 63.0), (120, 200, 64.0)]})
    assert _xid(values) == [
        ("h1", 0, _at(60), _at(120), CRITICAL_XIDS[63]),
        ("h1", 0, _at(120), _at(200), CRITICAL_XIDS[64]),
    ]
    # a sticky 63 ended by activity; the change to 64 afterwards is new downtime
    values = _values({("h1", "0"): [(0, 300, 63.0), (300, 400, 64.0)]})
    assert _xid(values, _active("h1", 0, [2])) == [
        ("h1", 0, _at(0), _at(120), CRITICAL_XIDS[63]),
        ("h1", 0, _at(300), _at(400), CRITICAL_XIDS[64]),
    ]


def test_informational_and_unknown_xids_never_make_a_gpu_down() -> None:
    spans = [(i * 100, i * 100 + 100, float(code)) for i, code in enumerate([*INFORMATIONAL_XIDS, 1, 200])]
    assert _xid(_values({("h1", "0"): spans})) == []
    # a critical XID that changes to an informational one recovers
    values = _values({("h1", "0"): [(0, 50, 95.0), (50, 100, 13.0)]})
    assert _xid(values) == [("h1", 0, _at(0), _at(50), CRITICAL_XIDS[95])]


def test_each_gpu_is_judged_alone_and_intervals_are_clipped_to_the_day() -> None:
    values = _values({("h1", "0"): [(-30, 30, 119.0)], ("h1", "1"): [(1430, 1450, 120.0)], ("h2", "0"): [(0, 5, 0.0)]})
    assert _xid(values) == [
        ("h1", 0, T0, _at(30), CRITICAL_XIDS[119]),
        ("h1", 1, _at(1430), END, CRITICAL_XIDS[120]),
    ]


def test_values_that_are_no_xid_keep_the_state_and_are_quarantined() -> None:
    values = _values(
        {
            ("h1", "0"): [(0, 10, 79.0), (10, 12, math.nan), (12, 20, 79.0), (20, 21, 2.5), (21, 22, -1.0)],
            ("h1", "x"): [(0, 3, 79.0)],
        }
    )
    codes, bad = screen_xid(values)
    # the unreadable points hold the value before them: one interval, not three
    assert stg_dcgm__gpu_xid(codes, NO_ACTIVITY, "c", T0, END, STEP).select("start_ts", "end_ts").rows() == [
        (_at(0), _at(22))
    ]
    # after a gap (the filtered read left the zeros out) an unreadable point holds nothing
    later = pl.concat([values, _values({("h1", "0"): [(300, 301, math.nan)]})])
    assert stg_dcgm__gpu_xid(screen_xid(later)[0], NO_ACTIVITY, "c", T0, END, STEP).height == 1
    rows = quarantine_xid(bad, "c", DCGM_XID, "2026-03-02")
    assert rows.schema == pl.Schema(QUARANTINE_SCHEMA)
    counted = {(loc, reason.split(":")[0], n) for loc, reason, n in rows.select("location", "reason", "n_rows").rows()}
    assert counted == {
        ("DCGM_FI_DEV_XID_ERRORS{Hostname=h1, gpu=0}", UNREADABLE_VALUE, 4),
        ("DCGM_FI_DEV_XID_ERRORS{Hostname=h1, gpu=x}", UNREADABLE_GPU, 3),
    }


def test_mig_instances_of_one_card_give_one_interval() -> None:
    values = _values({("h1", "0"): [(0, 30, 74.0)]})
    twice = pl.concat([values, values])  # two instances' series of the same card
    assert _xid(twice) == [("h1", 0, T0, _at(30), CRITICAL_XIDS[74])]


def test_no_xid_series_gives_no_rows_and_nothing_quarantined() -> None:
    codes, bad = screen_xid(pl.DataFrame(schema=XID_VALUES))
    assert bad.is_empty() and quarantine_xid(bad, "c", DCGM_XID, "2026-03-02").is_empty()
    got = stg_dcgm__gpu_xid(codes, NO_ACTIVITY, "c", T0, END, STEP)
    assert got.is_empty() and got.schema == pl.Schema(DOWNTIME_INTERVAL)


def test_late_scrapes_are_no_gaps() -> None:
    """Scrape times jitter: points 60.5 s apart are one run, ended once by the first active hour."""
    rows = [("h1", "0", T0 + timedelta(seconds=600 * 60 + i * 60.5), 95.0) for i in range(600)]
    values = pl.DataFrame(rows, schema=XID_VALUES, orient="row")
    assert _xid(values, _active("h1", 0, [12])) == [("h1", 0, _at(600), _at(720), CRITICAL_XIDS[95])]


def test_after_the_gpu_worked_the_same_xid_is_stale_across_gaps() -> None:
    # a missed scrape (or a reset the filtered read cannot tell apart) after the GPU worked at 02:00
    values = _values({("h1", "0"): [(60, 200, 48.0), (203, 400, 48.0), (400, 460, 64.0)]})
    assert _xid(values, _active("h1", 0, [2])) == [
        ("h1", 0, _at(60), _at(120), CRITICAL_XIDS[48]),
        ("h1", 0, _at(400), _at(460), CRITICAL_XIDS[64]),  # another XID is new downtime
    ]


def _carried(*rows: tuple[str, int, int]) -> pl.DataFrame:
    frame = [(host, gpu, CRITICAL_XIDS[code]) for host, gpu, code in rows]
    return pl.DataFrame(frame, schema={"hostname": pl.String, "gpu": pl.Int16, "reason": pl.String}, orient="row")


def test_a_value_carried_into_the_day_continues_only_the_previous_days_open_interval() -> None:
    values = _values({("h1", "0"): [(0, 1440, 79.0)], ("h1", "1"): [(0, 1440, 48.0)], ("h1", "2"): [(0, 90, 95.0)]})
    carried = _carried(("h1", 0, 79), ("h1", 2, 64))  # GPUs 0 and 2 were down at midnight; GPU 1 had worked since
    assert _xid(values, carried=carried) == [
        ("h1", 0, T0, END, CRITICAL_XIDS[79]),  # still down: from the day's start
        ("h1", 2, T0, _at(90), CRITICAL_XIDS[95]),  # 64 at midnight, 95 from the first point: a new XID
    ]  # GPU 1: a sticky value it worked through yesterday is no downtime
    # no previous day's partition: judged alone, down from the first point
    assert [r[:2] for r in _xid(values)] == [("h1", 0), ("h1", 1), ("h1", 2)]
    # a critical XID that comes later in the day is new downtime whatever was carried
    later = _values({("h1", "0"): [(300, 400, 79.0)]})
    assert _xid(later, carried=_carried()) == [("h1", 0, _at(300), _at(400), CRITICAL_XIDS[79])]
