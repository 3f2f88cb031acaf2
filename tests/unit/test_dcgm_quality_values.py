"""screen_samples: DCGM blank sentinels and out-of-range values are nulled and quarantined, bounds kept."""

from __future__ import annotations

import numpy as np
import pytest

from tests.unit.dcgm_quality_cases import KEY, LOC, payload, q_rows, sample, screen

SENTINEL_CASES = [
    (2147483632.0, "DCGM blank sentinel 2147483632 (INT32 BLANK)"),
    (2147483633.0, "DCGM blank sentinel 2147483633 (INT32 NOT_FOUND)"),
    (2147483634.0, "DCGM blank sentinel 2147483634 (INT32 NOT_SUPPORTED)"),
    (2147483635.0, "DCGM blank sentinel 2147483635 (INT32 NOT_PERMISSIONED)"),
    (
        float(9223372036854775792),
        "DCGM blank sentinel 9223372036854775792 (INT64 BLANK; its kin +1..+3 are the same float64)",
    ),
    (
        float(9223372036854775795),
        "DCGM blank sentinel 9223372036854775792 (INT64 BLANK; its kin +1..+3 are the same float64)",
    ),
    (140737488355328.0, "DCGM blank sentinel 140737488355328 (FP64 BLANK)"),
    (140737488355329.0, "DCGM blank sentinel 140737488355329 (FP64 NOT_FOUND)"),
    (140737488355330.0, "DCGM blank sentinel 140737488355330 (FP64 NOT_SUPPORTED)"),
    (140737488355331.0, "DCGM blank sentinel 140737488355331 (FP64 NOT_PERMISSIONED)"),
    (4294967295.0, "DCGM blank sentinel 4294967295 (uint32 -1)"),
    (float(18446744073709551615), "DCGM blank sentinel 18446744073709551615 (uint64 -1)"),
]


@pytest.mark.parametrize(("value", "reason"), SENTINEL_CASES)
@pytest.mark.parametrize("field", ["fb_used_mib", "sm_active"])
def test_sentinels_are_nulled_and_quarantined(field: str, value: float, reason: str) -> None:
    result = screen(
        [sample(0, **{field: value, "power_w": 250.0}), sample(15, **{field: 10.0 if field == "fb_used_mib" else 0.5})]
    )
    assert result.clean[field].to_list() == [None, 10.0 if field == "fb_used_mib" else 0.5]
    assert result.clean["power_w"].to_list() == [250.0, None]
    assert q_rows(result) == [(LOC + field, reason, 1)]
    assert (result.counts["sentinel_values"], result.counts["out_of_range_values"]) == (1, 0)


def test_a_sentinel_run_is_one_quarantine_row_with_its_span_and_example() -> None:
    blank = 140737488355328.0
    result = screen([sample(s, sm_active=blank, extra_labels='{"instance":"10.0.0.1:9400"}') for s in (0, 15, 30)])
    assert q_rows(result) == [(LOC + "sm_active", "DCGM blank sentinel 140737488355328 (FP64 BLANK)", 3)]
    assert payload(result) == {
        "example_value": blank,
        "extra_labels": '{"instance":"10.0.0.1:9400"}',
        "first_ts": "2026-03-01T10:00:00",
        "last_ts": "2026-03-01T10:00:30",
    }
    row = result.quarantine.row(0, named=True)
    assert (row["cluster"], row["source"], row["partition_key"]) == ("c1", "dcgm", KEY)
    assert result.counts["sentinel_values"] == 3 and result.clean.height == 3


RANGE_CASES = [
    ("sm_active", [1.2, 1.7], "sm_active above 1 (max 1.7)"),
    ("gr_engine_active", [-0.01], "gr_engine_active below 0 (min -0.01)"),
    ("sm_occupancy", [1.5], "sm_occupancy above 1 (max 1.5)"),
    ("tensor_active", [2.0], "tensor_active above 1 (max 2.0)"),
    ("dram_active", [-1.0, -3.0], "dram_active below 0 (min -3.0)"),
    ("gpu_util", [101.0], "gpu_util above 100 (max 101.0)"),
    ("gpu_util", [-1.0], "gpu_util below 0 (min -1.0)"),
    ("fb_used_mib", [-5.0], "fb_used_mib below 0 (min -5.0)"),
    ("fb_free_mib", [-1.0], "fb_free_mib below 0 (min -1.0)"),
    ("power_w", [3500.0], "power_w above 3000 (max 3500.0)"),
    ("power_w", [-0.5], "power_w below 0 (min -0.5)"),
    ("energy_mj", [-2.0], "energy_mj below 0 (min -2.0)"),
    ("sm_active", [float("nan")], "sm_active is not finite (NaN)"),
    ("power_w", [float("inf")], "power_w is not finite (inf)"),
    ("energy_mj", [float("-inf")], "energy_mj is not finite (-inf)"),
]


@pytest.mark.parametrize(("field", "values", "reason"), RANGE_CASES)
def test_out_of_range_values_are_nulled_and_quarantined_with_field_and_bound(
    field: str, values: list, reason: str
) -> None:
    result = screen([sample(15 * i, **{field: v}) for i, v in enumerate(values)] + [sample(99, sm_active=0.5)])
    assert result.clean[field].null_count() == result.clean.height - (field == "sm_active")
    assert q_rows(result) == [(LOC + field, reason, len(values))]
    assert result.counts["out_of_range_values"] == len(values)
    assert result.counts["non_finite_values"] == (len(values) if "finite" in reason else 0)
    example = payload(result)["example_value"]
    assert example == values[0] if np.isfinite(values[0]) else example == str(values[0]).replace("nan", "NaN")


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("sm_active", 0.0),
        ("sm_active", 1.0),
        ("sm_active", 1.0000005),
        ("sm_active", -0.0000005),
        ("gpu_util", 100.0),
        ("gpu_util", 0.0),
        ("power_w", 3000.0),
        ("fb_used_mib", 0.0),
        ("fb_free_mib", 200000.0),
        ("energy_mj", 4.5e12),
    ],
)
def test_values_at_or_near_the_bounds_are_kept(field: str, value: float) -> None:
    result = screen([sample(0, **{field: value})])
    assert result.clean[field].to_list() == [value]
    assert result.quarantine.height == 0 and result.counts["quarantined_values"] == 0


def test_location_names_kubernetes_labels_when_present() -> None:
    result = screen([sample(0, sm_active=3.0, hpc_job=None, pod="train-0", namespace="ml", container="main")])
    assert result.quarantine["location"].to_list() == [
        "hostname=n1 gpu=0 uuid=GPU-a gpu_i_id=- hpc_job=- pod=train-0 namespace=ml container=main field=sm_active"
    ]


def test_example_value_is_the_earliest_even_when_rows_arrive_unordered() -> None:
    result = screen([sample(30, sm_active=1.9), sample(0, sm_active=1.2), sample(15, sm_active=1.5)])
    assert q_rows(result) == [(LOC + "sm_active", "sm_active above 1 (max 1.9)", 3)]
    assert payload(result)["example_value"] == 1.2
    assert (payload(result)["first_ts"], payload(result)["last_ts"]) == ("2026-03-01T10:00:00", "2026-03-01T10:00:30")
    assert result.clean["ts"].is_sorted()
