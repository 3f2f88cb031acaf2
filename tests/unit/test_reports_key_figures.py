"""The month at a glance: the change against the previous month (present, absent, zero) and the
tiles of the review and of a department page, from crafted mart frames."""

from __future__ import annotations

from datetime import date

import polars as pl
import pytest

from contracts.capacity_states import STATES
from reports import ReviewSettings, build_inputs, render_review
from reports.change import DOWN, FLAT, NO_PREVIOUS, UP, Change, change
from reports.data import ReviewInputs
from reports.department_page import narrow, render_department_page
from reports.fmt import fmt_int
from reports.sections.department_figures import department_figures
from reports.sections.key_figures import review_figures
from tests.unit.reports_frames import cluster_row, department_row, runs_and_model_hours, section_ids, user_row

MONTH, PREVIOUS, EARLIER = date(2025, 3, 1), date(2025, 2, 1), date(2025, 1, 1)
SETTINGS = ReviewSettings(currency="EUR", prices={"H100": 2.0})


# -- the change --


def test_no_previous_month_is_said_not_guessed() -> None:
    assert change(10.0, None, "amount", "up", fmt_int) == Change(NO_PREVIOUS)
    assert change(0.4, float("nan"), "points", "up") == Change(NO_PREVIOUS)
    assert change(None, 5.0, "amount", "up", fmt_int) == Change("n/a")


def test_an_amount_shows_its_difference_and_its_relative_change() -> None:
    worse = change(1100.0, 1000.0, "amount", "down", fmt_int)
    assert worse == Change("+100 (+10.0%)", UP, "bad") and worse.verdict == "worse"
    better = change(750.0, 1000.0, "amount", "down", fmt_int)
    assert better == Change("-250 (-25.0%)", DOWN, "good") and better.verdict == "better"
    assert change(750.0, 1000.0, "amount", None, fmt_int) == Change("-250 (-25.0%)", DOWN, "neutral")


def test_a_previous_month_at_zero_has_no_percentage() -> None:
    assert change(5.0, 0.0, "amount", "down", fmt_int) == Change("+5 (from 0)", UP, "bad")
    assert change(0.0, 0.0, "amount", "down", fmt_int) == Change("+0", FLAT, "neutral")


def test_an_amount_within_half_a_percent_is_about_the_same() -> None:
    assert change(4518.0, 4526.0, "amount", "down", fmt_int) == Change("-8 (-0.2%)", FLAT, "neutral")
    assert change(4549.0, 4526.0, "amount", "down", fmt_int) == Change("+23 (+0.5%)", UP, "bad")


def test_shares_change_in_points_and_waits_in_minutes_or_hours() -> None:
    assert change(0.5, 0.4, "points", "up") == Change("+10.0 pp", UP, "good")
    assert change(0.40001, 0.4, "points", "up") == Change("+0.0 pp", FLAT, "neutral")
    assert change(0.39999, 0.4, "points", "up") == Change("+0.0 pp", FLAT, "neutral")  # never "-0.0"
    assert change(3600.0, 600.0, "minutes", "down") == Change("+50.0 min", UP, "bad")
    assert change(600.0, 20_400.0, "minutes", "down") == Change("-5.5 h", DOWN, "good")


# -- the review's tiles --


def states_row(cluster: str, month: date, capacity: float, down: float, planned: float = 0.0) -> dict:
    row = {f"{state}_gpu_hours": 0.0 for state in STATES} | {"down_gpu_hours": down, "planned_down_gpu_hours": planned}
    return {"cluster": cluster, "month": month, "capacity_gpu_hours": capacity} | row


def models(*rows: tuple) -> dict[str, pl.DataFrame]:
    names = [
        "month",
        "cluster",
        "gpu_model",
        "capacity_gpu_hours",
        "allocated_gpu_hours",
        "gpu_hours",
        "idle_gpu_hours",
    ]
    return runs_and_model_hours(pl.DataFrame(list(rows), schema=names, orient="row"))


def site(*, previous: bool = True, flags_before: int | None = 10, second_cluster: bool = False) -> ReviewInputs:
    """alpha: 1,000 GPU-hours of capacity, 600 allocated, 300 active this month (800, 400, 240 the
    month before); 300 idle GPU-hours at 2 EUR (160 before). ``flags_before``: flagged runs of the
    month before (None: the users mart has no rows that month)."""
    clusters = [cluster_row("alpha", MONTH, 1000.0, 600.0, 300.0, p50=60.0, p95=9000.0)]
    flag_months = [dict(cluster="alpha", month=MONTH, department="physics", flagged_job_count=7, wasted_gpu_hours=90.0)]
    states = [states_row("alpha", MONTH, 1000.0, 40.0, 10.0)]
    model_rows = [(MONTH, "alpha", "H100", 1000.0, 600.0, 600.0, 300.0)]
    if previous:
        clusters.append(cluster_row("alpha", PREVIOUS, 800.0, 400.0, 240.0, p50=60.0, p95=3600.0))
        states.append(states_row("alpha", PREVIOUS, 800.0, 0.0))
        model_rows.append((PREVIOUS, "alpha", "H100", 800.0, 400.0, 400.0, 160.0))
        if flags_before is not None:
            before = dict(flagged_job_count=flags_before, wasted_gpu_hours=15.0 * flags_before)
            flag_months.append(dict(cluster="alpha", month=PREVIOUS, department="physics") | before)
    if second_cluster:
        clusters.append(cluster_row("beta", MONTH, 500.0, 100.0, 100.0))
    departments = [department_row("alpha", "physics", 600.0, 300.0, p50=60.0, p95=9000.0)]
    if previous:
        departments.append(department_row("alpha", "physics", 400.0, 100.0, month=PREVIOUS, p50=60.0, p95=600.0))
    return build_inputs(
        MONTH,
        "test",
        clusters=pl.DataFrame(clusters),
        departments=pl.DataFrame(departments),
        flag_months=pl.DataFrame(flag_months),
        states=pl.DataFrame(states),
        settings=SETTINGS,
        **models(*model_rows),
    )


def tiles(inputs: ReviewInputs) -> dict[str, tuple[str, str, str]]:
    return {t.label: (t.value, t.detail, t.change.text) for t in review_figures(inputs)}


def test_the_review_tiles_with_a_previous_month() -> None:
    assert tiles(site()) == {
        "GPU-hours allocated": ("600", "60.0% of 1,000 GPU-hours capacity", "+200 (+50.0%)"),
        "Utilization": ("50.0%", "300 of the allocated GPU-hours active", "-10.0 pp"),
        "Idle cost (EUR)": ("600", "300 GPU-hours allocated, not active", "+280 (+87.5%)"),
        "Flagged jobs": ("7", "wasting 90 GPU-hours", "-3 (-30.0%)"),
        "Availability": ("95.0%", "50 GPU-hours down or in maintenance", "-5.0 pp"),
        "Queue wait, p95": ("2.5 h", "median 1.0 min", "+90.0 min"),
    }
    tones = {t.label: (t.change.arrow, t.change.tone) for t in review_figures(site())}
    assert tones["Utilization"] == (DOWN, "bad")
    assert tones["Flagged jobs"] == (DOWN, "good")
    assert tones["Idle cost (EUR)"] == (UP, "bad")


def test_without_a_previous_month_every_tile_says_so() -> None:
    shown = tiles(site(previous=False))
    assert shown["GPU-hours allocated"][0] == "600"
    assert {text for _, _, text in shown.values()} == {NO_PREVIOUS}


def test_a_previous_month_without_flags_had_none_one_without_rows_is_unknown() -> None:
    assert tiles(site(flags_before=0))["Flagged jobs"][2] == "+7 (from 0)"
    assert tiles(site(flags_before=None))["Flagged jobs"][2] == NO_PREVIOUS


def test_clusters_add_up_and_a_median_of_several_is_not_shown() -> None:
    shown = tiles(site(second_cluster=True))
    assert shown["GPU-hours allocated"][:2] == ("700", "46.7% of 1,500 GPU-hours capacity")
    assert "Queue wait, p95" not in shown


def test_availability_only_with_a_capacity_split() -> None:
    inputs = site()
    no_split = build_inputs(MONTH, "test", clusters=inputs.clusters, settings=SETTINGS, flag_months=inputs.flag_months)
    assert "Availability" not in tiles(no_split) and "GPU-hours allocated" in tiles(no_split)


def test_without_flag_months_the_month_comes_from_the_users_mart() -> None:
    users = pl.DataFrame([user_row("ann", "physics", 10.0, 4.5, flagged=3), user_row("bob", "chem", 10.0, 1.0)])
    inputs = build_inputs(MONTH, "test", clusters=site().clusters, users=users, settings=SETTINGS)
    assert tiles(inputs)["Flagged jobs"] == ("4", "wasting 6 GPU-hours", NO_PREVIOUS)


def test_no_cluster_rows_no_tiles() -> None:
    assert review_figures(build_inputs(MONTH, "test", settings=SETTINGS)) == []
    assert "key-figures" not in section_ids(render_review(build_inputs(MONTH, "test", settings=SETTINGS)))


# -- a department's tiles, and where they go --


def test_a_department_has_its_own_tiles() -> None:
    shown = {t.label: (t.value, t.change.text) for t in department_figures(narrow(site(), "physics"))}
    assert shown == {
        "GPU-hours used": ("600", "+200 (+50.0%)"),
        "Utilization": ("50.0%", "+25.0 pp"),
        "Idle GPU-hours": ("300", "+0 (+0.0%)"),
        "Flagged jobs": ("7", "-3 (-30.0%)"),
        "Queue wait, p95": ("2.5 h", "+2.3 h"),
    }


@pytest.mark.parametrize("page", ["review", "department"])
def test_the_tiles_come_before_every_table(page: str) -> None:
    inputs = site()
    html = render_review(inputs) if page == "review" else render_department_page(inputs, "physics")
    assert [i for i in section_ids(html) if i != "no-jobs"][0] == "key-figures"  # no jobs in these frames
    assert html.index('class="key-figures"') < html.index("<table")
    assert "better" in html and "worse" in html and "▲" in html
