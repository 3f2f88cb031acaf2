"""The flag reason registry (contracts/flags.py) against the rules that emit its codes."""

from __future__ import annotations

import polars as pl
import pytest

from contracts.flags import FLAG_REASONS, REASONS, SEVERITIES, flag_reason
from tests.unit.fct_job_flags_cases import flags, usage_row
from transforms.marts.fct_job_flags import RULES
from transforms.marts.flag_rules import emit

# Runs that get each of the nine codes (the rule tests hold the details): job id -> its codes.
ONE_OF_EACH = {
    "1": ("ZERO_UTIL", "MEMORY_HELD_IDLE"),
    "2": ("LOW_UTIL", "INPUT_BOUND", "MULTINODE_FRAGMENTED"),
    "4": ("LOW_UTIL", "INPUT_BOUND", "OVERSIZED", "DEBUG_OVER_LIMIT"),
    "5": ("LOW_UTIL", "INPUT_BOUND", "OVERSIZED"),
    "6": ("BUSY_ENGINE_IDLE_SMS",),
    "7": ("INPUT_BOUND", "IDLE_TAIL"),
}


def one_of_each() -> pl.DataFrame:
    rows = [
        usage_row("1", hours=10.0, util=0.0, mean_fb_used_mib=40_000.0),
        usage_row("2", hours=6.0, util=0.1, gpus=2.0, hosts="n1,n2"),
        usage_row("4", hours=30.0, util=0.2, partition_name="debug"),
        usage_row("5", hours=3.0, util=0.1, gpu_model="A100 3g.40gb", hosts="m1", gpus=3 / 7),
        usage_row("6", hours=3.0, util=0.6, mean_gpu_util=0.9, mean_gr_engine_active=0.9, mean_sm_active=0.01),
        usage_row("7", hours=5.0, util=0.3, mean_gr_engine_active=0.3, mean_sm_active=0.25),
    ]
    return flags(rows, profiles={"j7": {"tail_zero_hours": 3.0}})


def test_codes_are_unique_and_severities_known() -> None:
    assert len(set(REASONS)) == len(REASONS)
    for reason in FLAG_REASONS:
        assert reason.severities and set(reason.severities) <= set(SEVERITIES), reason.code
        assert list(reason.severities) == sorted(reason.severities, key=SEVERITIES.index), reason.code


def test_every_code_has_a_rule_named_after_it() -> None:
    names = [rule.__name__ for rule in RULES]
    assert [code for code in REASONS if code.lower() not in names] == []
    assert [name for name in names if not any(name.startswith(code.lower()) for code in REASONS)] == []


def test_the_rules_give_their_registered_severity_and_recommendation() -> None:
    out = one_of_each()
    got = {job: tuple(out.filter(pl.col("job_id") == job).get_column("reason")) for job in ONE_OF_EACH}
    assert got == ONE_OF_EACH
    for row in out.iter_rows(named=True):
        entry = flag_reason(row["reason"])
        assert row["severity"] in entry.severities, row
        if entry.recommendation is not None:
            assert row["recommendation"] == entry.recommendation


def test_severity_by_run_for_low_util() -> None:
    out = one_of_each().filter(pl.col("reason") == "LOW_UTIL")
    assert out.select("job_id", "severity").rows() == [("2", "high"), ("4", "medium"), ("5", "high")]


def test_an_unregistered_code_is_refused_naming_the_registry() -> None:
    frame = pl.DataFrame({"_run": [0]}, schema={"_run": pl.UInt32})
    with pytest.raises(KeyError, match=r"'NEW_REASON' is not in contracts/flags.py FLAG_REASONS"):
        emit(frame, "NEW_REASON", pl.lit("x"), pl.lit(0.0))
    with pytest.raises(ValueError, match=r"LOW_UTIL has severities \('high', 'medium'\)"):
        emit(frame, "LOW_UTIL", pl.lit("x"), pl.lit(0.0))
    with pytest.raises(ValueError, match="OVERSIZED has no fixed recommendation"):
        emit(frame, "OVERSIZED", pl.lit("x"), pl.lit(0.0))
