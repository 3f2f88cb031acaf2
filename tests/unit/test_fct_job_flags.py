"""fct_job_flags: threshold config keys, output schema and order, no flag on busy jobs, idle cost."""

from __future__ import annotations

import polars as pl
import pytest

from config.policy import FlagsConfig
from tests.unit.fct_job_flags_cases import flags, usage_row
from transforms.marts.fct_job_flags import SCHEMA


@pytest.mark.parametrize(
    ("overrides", "key"),
    [
        ({"input_bound_min_activity": 0.5}, "input_bound_min_activity"),
        ({"oversized_headroom": 0.9}, "oversized_headroom"),
        ({"memory_efficiency_threshold": 0.0}, "memory_efficiency_threshold"),
    ],
)
def test_flags_config_rejects_bad_new_keys(overrides: dict, key: str) -> None:
    with pytest.raises(ValueError, match=key):
        FlagsConfig(**overrides)


def test_a_busy_dense_job_is_not_flagged() -> None:
    assert flags([usage_row(util=0.8, peak_fb_used_mib=70_000.0, mean_fb_used_mib=60_000.0)]).height == 0


def test_schema_and_order() -> None:
    out = flags([usage_row("2", util=0.1), usage_row("1", util=0.0)])
    assert out.schema == pl.Schema(SCHEMA)
    assert out.select("job_id", "reason").rows() == [
        ("1", "ZERO_UTIL"),
        ("2", "LOW_UTIL"),
        ("2", "INPUT_BOUND"),
        ("2", "OVERSIZED"),
    ]


def test_idle_cost_uses_the_base_model_rate() -> None:
    whole = usage_row(util=0.1, hours=10.0)
    mig = usage_row("2", util=0.1, hours=10.0, hosts="m1", gpu_model="A100 3g.40gb", gpus=3 / 7)
    unpriced = usage_row("3", util=0.1, hours=10.0, gpu_model="L40S")
    out = flags([whole, mig, unpriced]).filter(pl.col("reason") == "LOW_UTIL")
    cost = dict(out.select("job_id", "idle_cost").iter_rows())
    assert cost["1"] == pytest.approx(9.0 * 2.0)
    assert cost["2"] == pytest.approx(10.0 * 3 / 7 * 0.9 * 1.0)
    assert cost["3"] is None
    assert set(out.get_column("currency")) == {"EUR"}
