"""Who gets a notice and who does not: thresholds, opt-out, addresses, the rate limit, and the words."""

from __future__ import annotations

from dataclasses import replace
from datetime import date, datetime, timedelta

import polars as pl
import pytest

from config.notices import NoticesConfig
from contracts.flags import flag_reason
from reports.user_notice_mail import notice_message
from reports.user_notice_select import NO_USER, SKIPS, Policy, address_of, select_notices
from reports.user_notice_text import notice_body, notice_subject
from transforms.marts.fct_job_flags import SCHEMA
from warehouse.user_notices import SCHEMA as LEDGER

MONTH = date(2026, 3, 1)
NOW = datetime(2026, 4, 3, 8, 0)
POLICY = Policy({"bob": "robert@lab.example"}, "{user}@uni.example", frozenset({"eve"}), 30, 5.0, 2)


def _flag(user: str | None, job: str, reason: str, wasted: float, **extra) -> dict:
    start = datetime(2026, 3, 4, 10, 0)
    row = {
        "cluster": "sim", "job_id": job, "job_id_raw": job, "start_time": start, "user_name": user,
        "account": "a", "department": "d", "division": "v", "partition_name": "gpu", "job_name": f"train-{job}",
        "gpus": 4.0, "gpu_model": "H100", "gpu_hours": 40.0, "utilization": 0.003, "utilization_signal": "sm_active",
        "reason": reason, "severity": flag_reason(reason).severities[0], "detail": f"evidence of {reason}",
        "recommendation": flag_reason(reason).recommendation or "request a 1g profile instead of the whole GPU",
        "wasted_gpu_hours": wasted, "idle_gpu_hours": 39.0, "idle_cost": 97.5, "currency": "EUR", "month": MONTH,
        "end_time": start + timedelta(hours=10),
    }  # fmt: skip
    return row | extra


def _flags(*rows: dict) -> pl.DataFrame:
    return pl.DataFrame(list(rows), schema={**SCHEMA, "end_time": pl.Datetime("us")})


def _ledger(*rows: tuple[str, date, datetime]) -> pl.DataFrame:
    return pl.DataFrame(
        [{"user_name": u, "month": m, "sent_at": t, "address": "x@y.z", "jobs": [], "wasted_gpu_hours": 1.0,
          "digest": "0"} for u, m, t in rows], schema=LEDGER)  # fmt: skip


FLAGS = _flags(
    _flag("amy", "11", "ZERO_UTIL", 39.0),
    _flag("amy", "11", "MEMORY_HELD_IDLE", 39.0),
    _flag("amy", "12", "OVERSIZED", 3.0, idle_gpu_hours=6.0, idle_cost=15.0),
    _flag("amy", "13", "IDLE_TAIL", 8.0),
    _flag("bob", "21", "INPUT_BOUND", 6.0),
    _flag("eve", "31", "ZERO_UTIL", 100.0),
    _flag("dan", "41", "LOW_UTIL", 4.9),
    _flag(None, "ns/PodGroup/x", "ZERO_UTIL", 50.0),
)


def _select(flags: pl.DataFrame = FLAGS, ledger: pl.DataFrame | None = None, policy: Policy = POLICY):
    return select_notices(flags, _ledger() if ledger is None else ledger, policy, MONTH, NOW)


def test_each_user_once_with_the_most_wasteful_jobs_first() -> None:
    notices, skipped = _select()
    by_user = {n.user: n for n in notices}
    assert sorted(by_user) == ["amy", "bob"]
    amy = by_user["amy"]
    assert amy.address == "amy@uni.example"
    assert [j.job_id for j in amy.jobs] == ["11", "13"] and amy.more_jobs == 1  # max_jobs = 2
    assert amy.wasted_gpu_hours == pytest.approx(39.0 + 3.0 + 8.0)  # a run's reasons overlap: its largest
    assert [r.code for r in amy.jobs[0].reasons] == ["ZERO_UTIL", "MEMORY_HELD_IDLE"]  # contract order
    assert amy.jobs[0].wasted_cost == pytest.approx(39.0 * 97.5 / 39.0)
    assert amy.wasted_cost == pytest.approx(97.5 + 97.5 / 39.0 * 8.0 + 3.0 * 15.0 / 6.0)
    assert by_user["bob"].address == "robert@lab.example"  # the file wins over the domain
    assert {s.user: s.skip for s in skipped} == {"eve": "opted_out", "dan": "below_threshold", NO_USER: "no_user"}


def test_no_address_without_file_entry_or_domain() -> None:
    policy = Policy({"bob": "robert@lab.example"}, None, frozenset(), 30, 0.0, 10)
    assert address_of("amy", policy) is None
    assert address_of("bob smith", POLICY) is None and address_of("a,b", POLICY) is None  # no header injection
    assert address_of("o'neil", POLICY) == "o'neil@uni.example"
    notices, skipped = _select(policy=policy)
    assert [n.user for n in notices] == ["bob"]
    assert {s.user: s.skip for s in skipped}["amy"] == "no_address"


def test_rate_limit_and_the_month_already_told() -> None:
    ledger = _ledger(
        ("amy", date(2026, 2, 1), NOW - timedelta(days=29)),  # inside 30 days: rate limited
        ("bob", date(2026, 2, 1), NOW - timedelta(days=31)),  # outside: notified again
    )
    notices, skipped = _select(ledger=ledger)
    assert [n.user for n in notices] == ["bob"]
    amy = next(s for s in skipped if s.user == "amy")
    assert amy.skip == "rate_limited" and "the next one from 2026-04-04" in amy.why
    again = _ledger(("bob", MONTH, NOW - timedelta(days=40)))
    assert {s.user: s.skip for s in _select(ledger=again)[1]}["bob"] == "already_notified"


def test_threshold_is_on_the_users_total() -> None:
    policy = Policy({}, "{user}@uni.example", frozenset(), 30, 6.0, 10)
    notices, skipped = _select(policy=policy)
    assert "bob" in {n.user for n in notices}  # 6.0 is not below 6.0
    assert {s.user: s.skip for s in skipped}["dan"] == "below_threshold"
    assert "4.9 < 6 GPU-hours" in next(s.why for s in skipped if s.user == "dan")
    assert set(SKIPS) >= {s.skip for s in skipped}


def test_the_words_name_jobs_waste_reason_and_recommendation() -> None:
    amy = next(n for n in _select()[0] if n.user == "amy")
    subject, body = notice_subject(amy), notice_body(amy, "gpu-help@example.org")
    assert subject == "[cardhours] Your GPU jobs in March 2026: 50 GPU-hours unused"
    assert "In March 2026, 3 of your GPU jobs held GPUs that did little or no work: 50.0" in body
    assert "1. Job 11 (train-11) on cluster sim" in body
    assert "Ran 2026-03-04 10:00 to 2026-03-04 20:00 UTC" in body
    assert "4 GPUs H100, 40.0 GPU-hours, busy 0% of the time" in body
    assert max(len(line) for line in body.splitlines()) <= 76
    assert "Wasted: 39.0 GPU-hours (about 97.50 EUR at list prices)" in body
    flat = " ".join(line.strip() for line in body.splitlines())
    for code in ("ZERO_UTIL", "MEMORY_HELD_IDLE", "IDLE_TAIL"):
        summary = flag_reason(code).summary
        assert f"Why: {summary[0].upper()}{summary[1:]} ({code}). evidence of {code}" in flat
        assert f"What to do: {flag_reason(code).recommendation}" in flat
    assert "1 more flagged job not listed" in body and "OVERSIZED" not in body
    assert "write to gpu-help@example.org" in body


def test_a_run_without_a_price_gives_no_total_cost() -> None:
    flags = _flags(_flag("amy", "11", "ZERO_UTIL", 39.0, idle_cost=None), _flag("amy", "12", "IDLE_TAIL", 8.0))
    amy = _select(flags)[0][0]
    assert amy.jobs[0].wasted_cost is None and amy.wasted_cost is None
    assert "at list prices" not in notice_body(amy, None).split("\n\n")[1]


def _monthly(last_sent: datetime, period_days: int | None = None) -> list[str]:
    """Who is rate limited when the monthly run of 2026-03-01 10:40 notifies about February."""
    period = NoticesConfig(domain="{user}@uni.example").period_days if period_days is None else period_days
    policy = Policy({}, "{user}@uni.example", frozenset(), period, 0.0, 10)
    flags = _flags(_flag("amy", "11", "ZERO_UTIL", 39.0, month=date(2026, 2, 1)))
    ledger = _ledger(("amy", date(2026, 1, 1), last_sent))
    _, skipped = select_notices(flags, ledger, policy, date(2026, 2, 1), datetime(2026, 3, 1, 10, 40))
    return [s.why for s in skipped if s.skip == "rate_limited"]


def test_the_default_period_never_holds_back_a_monthly_run() -> None:
    """February has 28 days: told on Feb 1 (later in the day), a user is told again on Mar 1."""
    assert _monthly(datetime(2026, 2, 1, 10, 45)) == []
    assert _monthly(datetime(2026, 2, 1, 23, 59)) == []  # whole calendar days: the time of day does not count
    (why,) = _monthly(datetime(2026, 2, 24, 9, 0))  # 5 days before: still limited
    assert "last notice 2026-02-24, the next one from 2026-03-24" in why


def test_the_period_counts_whole_utc_days() -> None:
    """Sent on day D, the next notice may go from day D + period_days on, never on D + period_days - 1."""
    assert _monthly(datetime(2026, 2, 2, 0, 0), 28) != []  # Mar 1 is Feb 2 + 27 days
    assert _monthly(datetime(2026, 2, 1, 23, 59), 28) == []  # Mar 1 is Feb 1 + 28 days
    assert _monthly(datetime(2026, 1, 31, 0, 0), 30) != [] and _monthly(datetime(2026, 1, 30, 23, 0), 30) == []


@pytest.mark.parametrize("user", ["alice:bob", "a(b)", 'a"b', "a,b", "a<b", "a b", ".a", "a.", "a..b", "a@b", "jörg"])
def test_a_user_name_that_is_no_local_part_is_skipped_and_named(user: str) -> None:
    assert address_of(user, POLICY) is None
    _, skipped = _select(_flags(_flag(user, "11", "ZERO_UTIL", 39.0)))
    (skip,) = skipped
    assert skip.skip == "unsafe_user_name" and repr(user) in skip.why and "addresses_file" in skip.why
    mapped = Policy({user: "someone@lab.example"}, "{user}@uni.example", frozenset(), 30, 0.0, 10)
    assert address_of(user, mapped) == "someone@lab.example"  # an explicit address is used as given


@pytest.mark.parametrize("user", ["o'neil", "j.doe", "a+b", "x_y-z", "a{b}~"])
def test_a_dot_atom_user_name_makes_an_address(user: str) -> None:
    assert address_of(user, POLICY) == f"{user}@uni.example"


def test_the_message_has_one_parsed_address_per_header() -> None:
    amy = next(n for n in _select()[0] if n.user == "amy")
    message = notice_message("cardhours@example.org", amy, "gpu-help@example.org")
    assert [a.addr_spec for a in message["To"].addresses] == ["amy@uni.example"]
    assert [a.addr_spec for a in message["Reply-To"].addresses] == ["gpu-help@example.org"]
    with pytest.raises(ValueError, match="alice:bob"):  # never a group "alice:" sent to bob
        notice_message("cardhours@example.org", replace(amy, address="alice:bob@uni.example"), None)
