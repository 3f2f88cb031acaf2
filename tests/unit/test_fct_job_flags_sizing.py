"""fct_job_flags OVERSIZED (the smallest fitting MIG slice)."""

from __future__ import annotations

import polars as pl
import pytest

from tests.unit.fct_job_flags_cases import flags, reasons, usage_row


@pytest.mark.parametrize(
    ("host", "util", "peak_gib", "profile"),
    [
        ("n1", 0.10, 8.0, "1g.10gb"),  # 8 GiB x 1.2 = 9.6 <= 10.0 GiB
        ("n1", 0.10, 8.6, "2g.20gb"),  # 10.3 GiB: over 1g
        ("n1", 0.12, 4.0, "2g.20gb"),  # 0.12 x 1.2 = 0.144 > 1/7 of the compute
        ("n1", 0.24, 30.0, "3g.40gb"),
        ("n1", 0.24, 34.0, None),  # 40.8 GiB: not even half the card
        ("n1", 0.25, 1.0, None),  # not below oversized_max_utilization
        ("h200", 0.05, 1.0, "1g.18gb"),  # the names scale with the card
        ("h200", 0.05, 50.0, "3g.71gb"),
        ("a40", 0.05, 1.0, "1g.5gb"),
        ("a40", 0.05, 6.0, "2g.10gb"),
    ],
)
def test_oversized_names_the_smallest_fitting_profile(host: str, util: float, peak_gib: float, profile) -> None:
    row = usage_row(util=util, hosts=host, peak_fb_used_mib=peak_gib * 1024, mean_fb_used_mib=peak_gib * 512)
    out = flags([row]).filter(pl.col("reason") == "OVERSIZED")
    if profile is None:
        assert out.height == 0
    else:
        assert (
            out.get_column("recommendation")[0] == f"Would fit a MIG slice: request {profile} instead of a whole GPU."
        )
        assert out.get_column("severity")[0] == "low"


def test_oversized_not_for_idle_jobs() -> None:
    assert "OVERSIZED" not in reasons([usage_row(util=0.01, mean_gpu_util=0.0)])  # ZERO_UTIL: end it
    assert "OVERSIZED" in reasons([usage_row(util=0.0101, mean_gpu_util=0.0)])


def test_oversized_only_for_single_whole_gpus_or_single_mig_instances() -> None:
    two = usage_row(util=0.05, gpus=2.0, gpu_hours=4.0)
    two_slices = usage_row("2", util=0.05, hosts="m1", gpu_model="A100 3g.40gb", gpus=6 / 7)
    assert "OVERSIZED" not in flags([two, two_slices]).get_column("reason").to_list()
    mig = usage_row("3", util=0.05, hosts="m1", gpu_model="A100 3g.40gb", gpus=3 / 7)
    out = flags([mig]).filter(pl.col("reason") == "OVERSIZED")
    assert out.get_column("recommendation").to_list() == [
        "Would fit a smaller MIG slice: request a 1g profile instead of 3g.40gb."
    ]


@pytest.mark.parametrize(
    ("profile", "util", "peak_mib", "slices"),
    [
        ("3g.40gb", 0.05, 8192, 1),  # 0.05 x 3 x 1.2 = 0.18 of a slice; 9,830 <= 40,960 / 4 MiB
        ("3g.40gb", 0.05, 9000, 2),  # 10,800 MiB: over a 1g slice's quarter of the instance
        ("3g.40gb", 0.20, 4000, 1),  # 0.72 of a slice
        ("3g.40gb", 0.24, 4000, 1),  # 0.24 x 3 x 1.2 = 0.864 of a slice
        ("4g.40gb", 0.24, 4000, 2),  # 0.24 x 4 x 1.2 = 1.152: more than one slice
        ("1g.10gb", 0.05, 100, None),  # nothing smaller
        ("3g.40gb", 0.10, 20000, None),  # 24,000 MiB: more than a 2g slice's half
        ("3g.40gb", 0.30, 4000, None),  # not below oversized_max_utilization
        ("4g.40gb", 0.20, 30000, 3),  # 36,000 MiB needs the 3g shape (the same memory as 4g)
    ],
)
def test_oversized_mig_names_the_smallest_fitting_slice(profile: str, util: float, peak_mib: float, slices) -> None:
    row = usage_row(
        util=util,
        hosts="m1",
        gpu_model=f"A100 {profile}",
        gpus=int(profile[0]) / 7,
        peak_fb_used_mib=peak_mib,
        mean_fb_used_mib=peak_mib / 2,
    )
    out = flags([row]).filter(pl.col("reason") == "OVERSIZED")
    if slices is None:
        assert out.height == 0
        return
    assert out.get_column("recommendation")[0] == (
        f"Would fit a smaller MIG slice: request a {slices}g profile instead of {profile}."
    )
    current = int(profile[0])
    assert out.get_column("wasted_gpu_hours")[0] == pytest.approx(2.0 * current / 7 * (1 - slices / current))


def test_oversized_wastes_what_the_slice_leaves() -> None:
    out = flags([usage_row(hours=7.0, util=0.05)]).filter(pl.col("reason") == "OVERSIZED")
    assert out.get_column("wasted_gpu_hours")[0] == pytest.approx(7.0 * 6 / 7)
