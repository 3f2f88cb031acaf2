"""fct_job_flags MEMORY_HELD_IDLE / BUSY_ENGINE_IDLE_SMS / INPUT_BOUND at and past their thresholds."""

from __future__ import annotations

import polars as pl
import pytest

from tests.unit.fct_job_flags_cases import H100_MIB, flags, reasons, usage_row


@pytest.mark.parametrize(
    ("held", "util", "flagged"),
    [
        (0.1001, 0.05, True),
        (0.10, 0.0, False),
        (0.5, 0.0501, False),
    ],
)
def test_memory_held_idle(held: float, util: float, flagged: bool) -> None:
    row = usage_row(util=util, mean_fb_used_mib=held * H100_MIB, peak_fb_used_mib=held * H100_MIB)
    got = reasons([row])
    assert (got.get("MEMORY_HELD_IDLE") == "high") is flagged
    assert ("MEMORY_HELD_IDLE" in got) is flagged


@pytest.mark.parametrize(
    ("gpu_util", "gr", "sm", "flagged"),
    [
        (0.5, 0.5, 0.0499, True),
        (0.4999, 0.4999, 0.01, False),
        (None, 0.5, 0.01, True),
        (0.9, None, 0.01, True),
        (0.9, 0.9, 0.05, False),
        (0.9, 0.9, None, False),
    ],
)
def test_busy_engine_idle_sms(gpu_util, gr, sm, flagged: bool) -> None:
    row = usage_row(
        util=sm if sm is not None else gr, mean_gpu_util=gpu_util, mean_gr_engine_active=gr, mean_sm_active=sm
    )
    got = reasons([row])
    assert (got.get("BUSY_ENGINE_IDLE_SMS") == "medium") is flagged


def test_busy_engine_detail_has_the_evidence() -> None:
    row = usage_row(util=0.006, mean_gpu_util=0.8, mean_gr_engine_active=0.8, mean_sm_active=0.006)
    detail = flags([row]).filter(pl.col("reason") == "BUSY_ENGINE_IDLE_SMS").get_column("detail")[0]
    assert detail == "SM active 0.6% while GPU_UTIL reads 80.0% and GR_ENGINE_ACTIVE 80.0%"


@pytest.mark.parametrize(
    ("gr", "sm", "steady", "flagged"),
    [
        (0.12, 0.10, 1.0, True),  # bursts of wide kernels, steady
        (0.02, 0.01, 1.0, True),  # lowest engine activity in the band
        (0.0199, 0.015, 1.0, False),
        (0.4999, 0.45, 1.0, True),
        (0.50, 0.45, 1.0, False),  # busy half the time or more: not a duty-cycle problem
        (0.12, 0.06, 1.0, True),  # SM/GR = 0.5
        (0.12, 0.0599, 1.0, False),  # narrow kernels: steadily low, not starved
        (0.12, 0.10, 0.75, True),
        (0.12, 0.10, 0.7499, False),  # phases, not a steady duty cycle
        (0.12, 0.10, None, False),
    ],
)
def test_input_bound(gr: float, sm: float, steady, flagged: bool) -> None:
    row = usage_row(util=sm, mean_gpu_util=gr, mean_gr_engine_active=gr, mean_sm_active=sm)
    got = reasons([row], profiles={"j1": {"steady_share": steady}})
    assert (got.get("INPUT_BOUND") == "medium") is flagged
