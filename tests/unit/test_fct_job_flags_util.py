"""fct_job_flags ZERO_UTIL / LOW_UTIL: severity bands, minimum runtime and the memory-bound exemption."""

from __future__ import annotations

import pytest

from tests.unit.fct_job_flags_cases import H100_MIB, reasons, usage_row


@pytest.mark.parametrize(("util", "expected"), [(0.0, "high"), (0.01, "high"), (0.0101, None)])
def test_zero_util_at_its_threshold(util: float, expected: str | None) -> None:
    assert reasons([usage_row(util=util, mean_gpu_util=0.0)]).get("ZERO_UTIL") == expected


def test_zero_util_not_when_the_engine_looks_busy_nor_without_samples() -> None:
    assert "ZERO_UTIL" not in reasons([usage_row(util=0.0, mean_gpu_util=0.5, mean_sm_active=0.0)])
    assert reasons([usage_row(util=None)]) == {}


@pytest.mark.parametrize(
    ("util", "expected"),
    [
        (0.02, "high"),
        (0.1499, "high"),
        (0.15, "medium"),
        (0.2499, "medium"),
        (0.25, None),
        (0.005, None),
    ],
)
def test_low_util_bands(util: float, expected: str | None) -> None:
    assert reasons([usage_row(util=util)]).get("LOW_UTIL") == expected


@pytest.mark.parametrize(("minutes", "flagged"), [(29.9, False), (30.0, True)])
def test_minimum_runtime(minutes: float, flagged: bool) -> None:
    got = reasons([usage_row(hours=minutes / 60, util=0.1)])
    assert ("LOW_UTIL" in got) is flagged
    assert reasons([usage_row(hours=minutes / 60, util=0.1)], min_runtime_minutes=0).get("LOW_UTIL") == "high"


@pytest.mark.parametrize(
    ("efficiency", "exempt", "flagged"),
    [
        (0.80, True, False),
        (0.7999, True, True),
        (0.80, False, True),
    ],
)
def test_memory_bound_exemption(efficiency: float, exempt: bool, flagged: bool) -> None:
    row = usage_row(util=0.1, peak_fb_used_mib=efficiency * H100_MIB)
    got = reasons([row], low_util_exempt_memory_bound=exempt)
    assert ("LOW_UTIL" in got) is flagged
