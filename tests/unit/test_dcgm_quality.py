"""screen_samples: sentinels, out-of-range values, restart duplicates, MIG device fields."""

from __future__ import annotations

import json
import time
from datetime import date, datetime, timedelta

import numpy as np
import polars as pl
import pytest

from cardhours.schemas import QUARANTINE_SCHEMA, RAW_SAMPLE_SCHEMA, SAMPLE_VALUE_COLUMNS
from transforms.dcgm_quality import DUPLICATE_REASON, ScreenResult, quarantine_share, screen_samples

T0 = datetime(2026, 3, 1, 10)
KEY = "2026-03-01"


def sample(second: int, **values) -> dict:
    """A RAW_SAMPLE_SCHEMA row ``second`` s after 10:00 on n1 GPU 0, job 7."""
    row = dict.fromkeys(RAW_SAMPLE_SCHEMA)
    row.update(
        cluster="c1", day=date(2026, 3, 1), ts=T0 + timedelta(seconds=second), hostname="n1", gpu=0, uuid="GPU-a",
        model_name="NVIDIA H100 80GB HBM3", pci_bus_id="0:1b", device="nvidia0", hpc_job="7", extra_labels="{}",
    )
    row.update(values)
    return row


def screen(rows: list[dict]) -> ScreenResult:
    result = screen_samples(pl.DataFrame(rows, schema=RAW_SAMPLE_SCHEMA), KEY)
    assert result.clean.schema == pl.Schema(RAW_SAMPLE_SCHEMA)
    assert result.quarantine.schema == pl.Schema(QUARANTINE_SCHEMA)
    c = result.counts
    assert c["clean_rows"] == c["total_rows"] - c["duplicate_rows"] + c["mig_device_rows"] == result.clean.height
    assert c["quarantined_values"] == result.quarantine["n_rows"].sum()
    assert c["quarantined_values"] == c["duplicate_values"] + c["sentinel_values"] + c["out_of_range_values"]
    return result


def q_rows(result: ScreenResult) -> list[tuple]:
    return result.quarantine.select("location", "reason", "n_rows").rows()


def payload(result: ScreenResult, i: int = 0) -> dict:
    return json.loads(result.quarantine["payload"][i])


LOC = "hostname=n1 gpu=0 uuid=GPU-a gpu_i_id=- hpc_job=7 field="

SENTINEL_CASES = [
    (2147483632.0, "DCGM blank sentinel 2147483632 (INT32 BLANK)"),
    (2147483633.0, "DCGM blank sentinel 2147483633 (INT32 NOT_FOUND)"),
    (2147483634.0, "DCGM blank sentinel 2147483634 (INT32 NOT_SUPPORTED)"),
    (2147483635.0, "DCGM blank sentinel 2147483635 (INT32 NOT_PERMISSIONED)"),
    (float(9223372036854775792), "DCGM blank sentinel 9223372036854775792 (INT64 BLANK; its kin +1..+3 are the same float64)"),
    (float(9223372036854775795), "DCGM blank sentinel 9223372036854775792 (INT64 BLANK; its kin +1..+3 are the same float64)"),
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
    result = screen([sample(0, **{field: value, "power_w": 250.0}), sample(15, **{field: 10.0 if field == "fb_used_mib" else 0.5})])
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
def test_out_of_range_values_are_nulled_and_quarantined_with_field_and_bound(field: str, values: list, reason: str) -> None:
    result = screen([sample(15 * i, **{field: v}) for i, v in enumerate(values)] + [sample(99, sm_active=0.5)])
    assert result.clean[field].null_count() == result.clean.height - (field == "sm_active")
    assert q_rows(result) == [(LOC + field, reason, len(values))]
    assert result.counts["out_of_range_values"] == len(values)
    assert result.counts["non_finite_values"] == (len(values) if "finite" in reason else 0)
    example = payload(result)["example_value"]
    assert example == values[0] if np.isfinite(values[0]) else example == str(values[0]).replace("nan", "NaN")


@pytest.mark.parametrize(
    ("field", "value"),
    [("sm_active", 0.0), ("sm_active", 1.0), ("sm_active", 1.0000005), ("sm_active", -0.0000005), ("gpu_util", 100.0),
     ("gpu_util", 0.0), ("power_w", 3000.0), ("fb_used_mib", 0.0), ("fb_free_mib", 200000.0), ("energy_mj", 4.5e12)],
)
def test_values_at_or_near_the_bounds_are_kept(field: str, value: float) -> None:
    result = screen([sample(0, **{field: value})])
    assert result.clean[field].to_list() == [value]
    assert result.quarantine.height == 0 and result.counts["quarantined_values"] == 0


def test_restart_duplicates_of_equal_length_keep_the_smallest_hostname() -> None:
    old, new = "dcgm-exporter-aaaa", "dcgm-exporter-bbbb"  # the exporter pod name in Hostname
    rows = [sample(s, hostname=old, sm_active=0.5, power_w=200.0, extra_labels='{"instance":"10.0.0.1:9400"}') for s in (0, 15, 30)]
    rows += [sample(s, hostname=new, sm_active=0.5, power_w=201.0, extra_labels='{"instance":"10.0.0.2:9400"}') for s in (15, 30, 45)]
    result = screen(rows)
    assert result.clean.select("ts", "hostname", "power_w").rows() == [
        (T0, old, 200.0), (T0 + timedelta(seconds=15), old, 200.0), (T0 + timedelta(seconds=30), old, 200.0),
        (T0 + timedelta(seconds=45), new, 201.0),
    ]
    loc = f"hostname={new} gpu=0 uuid=GPU-a gpu_i_id=- hpc_job=7 field="
    assert q_rows(result) == [(loc + "power_w", DUPLICATE_REASON, 2), (loc + "sm_active", DUPLICATE_REASON, 2)]
    assert payload(result) == {"example_value": 201.0, "extra_labels": '{"instance":"10.0.0.2:9400"}',
                               "first_ts": "2026-03-01T10:00:15", "last_ts": "2026-03-01T10:00:30"}
    assert (result.counts["duplicate_rows"], result.counts["duplicate_values"]) == (2, 4)


def test_restart_duplicates_keep_the_longer_series_before_the_smaller_name() -> None:
    # a second exporter pod reported this GPU for two scrapes: it must not win on its name
    rows = [sample(s, hostname="node-a", sm_active=0.5) for s in (0, 15, 30, 45)]
    rows += [sample(s, hostname="dcgm-exporter-7xk2p", sm_active=0.5) for s in (15, 30)]
    result = screen(rows)
    assert result.clean["hostname"].to_list() == ["node-a"] * 4
    assert q_rows(result) == [
        ("hostname=dcgm-exporter-7xk2p gpu=0 uuid=GPU-a gpu_i_id=- hpc_job=7 field=sm_active", DUPLICATE_REASON, 2)
    ]
    shuffled = screen(rows[::-1])
    assert shuffled.clean.equals(result.clean) and shuffled.quarantine.equals(result.quarantine)


def test_restart_duplicates_differing_only_in_extra_labels() -> None:
    rows = [sample(0, sm_active=0.1, extra_labels='{"instance":"b"}'), sample(0, sm_active=0.2, extra_labels='{"instance":"a"}')]
    result = screen(rows)
    assert result.clean.select("extra_labels", "sm_active").rows() == [('{"instance":"a"}', 0.2)]
    assert result.counts["duplicate_rows"] == 1


def test_different_jobs_instances_or_gpus_are_not_duplicates() -> None:
    rows = [
        sample(0, sm_active=0.1),
        sample(0, sm_active=0.2, hpc_job="8", hostname="other"),  # two jobs sharing the GPU
        sample(0, sm_active=0.3, gpu_i_id=1, hostname="other"),  # a MIG instance
        sample(0, sm_active=0.4, uuid="GPU-b", hostname="other"),  # another GPU
        sample(0, sm_active=0.5, uuid=None, hostname="x"),  # no uuid: never merged
        sample(0, sm_active=0.6, uuid=None, hostname="y"),
    ]
    result = screen(rows)
    assert sorted(result.clean["sm_active"].to_list()) == [0.1, 0.2, 0.3, 0.4, 0.5, 0.6]
    assert result.counts["duplicate_rows"] == 0 and result.quarantine.height == 0


def mig(second: int, gi: int, **values) -> dict:
    labels = {"gpu": 1, "uuid": "GPU-m", "gpu_i_id": gi, "gpu_i_profile": "3g.40gb", "hpc_job": str(100 + gi)}
    return sample(second, **{**labels, **values})


def test_mig_device_fields_move_to_one_device_row_per_gpu_and_ts() -> None:
    rows = [mig(s, gi, sm_active=0.1 * gi, power_w=300.0, energy_mj=5e6 + s) for s in (0, 15) for gi in (1, 2)]
    result = screen(rows)
    cols = ["ts", "gpu", "uuid", "gpu_i_id", "gpu_i_profile", "hpc_job", "sm_active", "power_w", "energy_mj", "extra_labels"]
    assert result.clean.select(cols).rows() == [  # instance rows as they came, then the device rows
        (T0, 1, "GPU-m", 1, "3g.40gb", "101", 0.1, None, None, "{}"),
        (T0 + timedelta(seconds=15), 1, "GPU-m", 1, "3g.40gb", "101", 0.1, None, None, "{}"),
        (T0, 1, "GPU-m", 2, "3g.40gb", "102", 0.2, None, None, "{}"),
        (T0 + timedelta(seconds=15), 1, "GPU-m", 2, "3g.40gb", "102", 0.2, None, None, "{}"),
        (T0, 1, "GPU-m", None, None, None, None, 300.0, 5e6, "{}"),
        (T0 + timedelta(seconds=15), 1, "GPU-m", None, None, None, None, 300.0, 5e6 + 15, "{}"),
    ]
    device = result.clean.filter(pl.col("gpu_i_id").is_null()).row(0, named=True)
    assert (device["hostname"], device["model_name"], device["pci_bus_id"], device["device"], device["cluster"]) == (
        "n1", "NVIDIA H100 80GB HBM3", "0:1b", "nvidia0", "c1")
    assert device["pod"] is None and device["day"] == date(2026, 3, 1)
    c = result.counts
    assert (c["mig_device_rows"], c["mig_device_values_moved"], c["mig_device_field_disagreement"]) == (2, 8, 0)
    assert result.quarantine.height == 0
    # the GPU's power is counted once per timestamp, not once per instance
    assert result.clean["power_w"].sum() == 600.0


def test_mig_instances_that_disagree_keep_the_max_and_are_counted() -> None:
    rows = [mig(0, 1, power_w=300.0, gpu_util=40.0), mig(0, 2, power_w=310.0, gpu_util=40.0), mig(0, 3, power_w=None)]
    result = screen(rows)
    device = result.clean.filter(pl.col("gpu_i_id").is_null())
    assert device.select("power_w", "gpu_util").rows() == [(310.0, 40.0)]
    assert result.counts["mig_device_field_disagreement"] == 1


def test_a_sentinel_on_one_instance_is_quarantined_and_the_device_row_uses_the_others() -> None:
    result = screen([mig(0, 1, power_w=2147483632.0), mig(0, 2, power_w=300.0)])
    assert result.clean.filter(pl.col("gpu_i_id").is_null())["power_w"].to_list() == [300.0]
    assert q_rows(result) == [
        ("hostname=n1 gpu=1 uuid=GPU-m gpu_i_id=1 hpc_job=101 field=power_w", "DCGM blank sentinel 2147483632 (INT32 BLANK)", 1)
    ]
    assert result.counts["mig_device_field_disagreement"] == 0


def test_an_existing_whole_gpu_row_gets_the_device_values_instead_of_a_new_row() -> None:
    parent = sample(0, gpu=1, uuid="GPU-m", hpc_job=None, power_w=None, gpu_util=55.0)
    result = screen([parent, mig(0, 1, power_w=300.0, gpu_util=10.0), mig(0, 2, power_w=300.0, gpu_util=10.0)])
    assert result.clean.height == 3 and result.counts["mig_device_rows"] == 0
    whole = result.clean.filter(pl.col("gpu_i_id").is_null())
    assert whole.select("power_w", "gpu_util").rows() == [(300.0, 55.0)]  # its own value wins, its null is filled
    assert result.counts["mig_parent_rows_filled"] == 1


def test_mig_gpu_without_uuid_is_keyed_by_host_and_gpu() -> None:
    rows = [mig(0, 1, uuid=None, power_w=300.0), mig(0, 2, uuid=None, power_w=300.0), mig(0, 1, uuid=None, hostname="n2", power_w=250.0)]
    result = screen(rows)
    device = result.clean.filter(pl.col("gpu_i_id").is_null()).select("hostname", "power_w").rows()
    assert device == [("n1", 300.0), ("n2", 250.0)]


def test_location_names_kubernetes_labels_when_present() -> None:
    result = screen([sample(0, sm_active=3.0, hpc_job=None, pod="train-0", namespace="ml", container="main")])
    assert result.quarantine["location"].to_list() == [
        "hostname=n1 gpu=0 uuid=GPU-a gpu_i_id=- hpc_job=- pod=train-0 namespace=ml container=main field=sm_active"
    ]


def test_all_problems_together_exact_counts_share_and_determinism() -> None:
    rows = [sample(s, sm_active=0.5, power_w=200.0, gpu_util=50.0) for s in range(0, 150, 15)]  # 10 rows, 30 values
    rows += [sample(0, hostname="n9-restarted", sm_active=0.5, power_w=200.0)]  # dropped duplicate: 2 values
    rows[1]["sm_active"] = 1.5
    rows[2]["power_w"] = 4294967295.0
    rows[3]["gpu_util"] = float("nan")
    rows += [mig(0, 1, sm_active=0.2, power_w=100.0), mig(0, 2, sm_active=0.3, power_w=100.0)]  # 4 values
    result = screen(rows)
    assert result.counts == {
        "total_rows": 13, "input_values": 36, "clean_rows": 13, "duplicate_rows": 1, "duplicate_values": 2,
        "sentinel_values": 1, "out_of_range_values": 2, "non_finite_values": 1, "mig_device_rows": 1,
        "mig_device_values_moved": 2, "mig_device_field_disagreement": 0, "mig_parent_rows_filled": 0,
        "quarantine_groups": 5, "quarantined_values": 5,
    }
    assert quarantine_share(result.counts) == pytest.approx(5 / 36)
    shuffled = screen_samples(pl.DataFrame(rows[::-1], schema=RAW_SAMPLE_SCHEMA), KEY)
    assert shuffled.clean.equals(result.clean, null_equal=True)
    assert shuffled.quarantine.equals(result.quarantine)
    assert shuffled.counts == result.counts


def test_clean_input_passes_through_unchanged() -> None:
    frame = pl.DataFrame([sample(s, sm_active=0.5, gpu_util=40.0) for s in (0, 15)], schema=RAW_SAMPLE_SCHEMA)
    result = screen_samples(frame, KEY)
    assert result.clean.equals(frame) and result.quarantine.height == 0
    assert quarantine_share(result.counts) == 0.0
    empty = screen_samples(frame.clear(), KEY)
    assert empty.clean.height == 0 and empty.counts["total_rows"] == 0 and quarantine_share(empty.counts) == 0.0


def test_screening_a_million_rows_is_fast() -> None:
    n_gpus, n_ts = 250, 4000
    rng = np.random.default_rng(1)
    gpu = pl.Series("g", np.repeat(np.arange(n_gpus), n_ts))
    frame = pl.DataFrame({"g": gpu, "i": np.tile(np.arange(n_ts, dtype=np.int64), n_gpus)}).select(
        cluster=pl.lit("c1"),
        day=pl.lit(date(2026, 3, 1)),
        ts=(pl.col("i") * 15_000_000 + 1_772_323_200_000_000).cast(pl.Datetime("us")),
        hostname=pl.format("n{}", pl.col("g") // 8),
        gpu=(pl.col("g") % 8).cast(pl.Int16),
        uuid=pl.format("GPU-{}", "g"),
        hpc_job=(pl.col("g") // 4).cast(pl.String),
        **{f: pl.lit(rng.random(n_gpus * n_ts)) for f in SAMPLE_VALUE_COLUMNS},
        extra_labels=pl.lit("{}"),
    )
    frame = frame.with_columns(pl.when(pl.int_range(pl.len()) % 1000 == 0).then(2.0).otherwise("sm_active").alias("sm_active"))
    frame = pl.concat([frame, pl.DataFrame(schema=RAW_SAMPLE_SCHEMA)], how="diagonal_relaxed").select(list(RAW_SAMPLE_SCHEMA))
    started = time.perf_counter()
    result = screen_samples(frame, KEY)
    elapsed = time.perf_counter() - started
    assert result.counts["out_of_range_values"] == 1000 and result.quarantine.height == n_gpus
    assert elapsed < 2.0, f"screening 1 M rows took {elapsed:.2f} s"


def test_example_value_is_the_earliest_even_when_rows_arrive_unordered() -> None:
    result = screen([sample(30, sm_active=1.9), sample(0, sm_active=1.2), sample(15, sm_active=1.5)])
    assert q_rows(result) == [(LOC + "sm_active", "sm_active above 1 (max 1.9)", 3)]
    assert payload(result)["example_value"] == 1.2
    assert (payload(result)["first_ts"], payload(result)["last_ts"]) == ("2026-03-01T10:00:00", "2026-03-01T10:00:30")
    assert result.clean["ts"].is_sorted()


def test_normalize_pivot_screen_compose_on_exporter_like_series() -> None:
    from cardhours.schemas import DCGM_FIELDS
    from cardhours.sources.metrics import conform_samples
    from transforms.dcgm_labels import normalize_series
    from transforms.dcgm_pivot import pivot_samples

    k8s = {"exported_pod": "train-0", "exported_namespace": "ml", "namespace": "gpu-operator", "job": "gpu"}
    mig_labels = {"gpu": "0", "UUID": "GPU-m", "GPU_I_PROFILE": "3g.40gb"}
    labels = [  # series_id -> (metric, labels)
        ("DCGM_FI_PROF_SM_ACTIVE", {"Hostname": "exp-a", "instance": "10.0.0.1:9400", "pod": "exp-a", **k8s, **mig_labels, "GPU_I_ID": "1"}),
        ("DCGM_FI_DEV_POWER_USAGE", {"Hostname": "exp-a", "instance": "10.0.0.1:9400", "pod": "exp-a", **k8s, **mig_labels, "GPU_I_ID": "1"}),
        ("DCGM_FI_PROF_SM_ACTIVE", {"Hostname": "exp-a", "instance": "10.0.0.1:9400", "pod": "exp-a", **k8s, **mig_labels, "GPU_I_ID": "2"}),
        ("DCGM_FI_DEV_POWER_USAGE", {"Hostname": "exp-a", "instance": "10.0.0.1:9400", "pod": "exp-a", **k8s, **mig_labels, "GPU_I_ID": "2"}),
        # the exporter restarted as exp-b: same GPU instance 1, new Hostname/instance/pod
        ("DCGM_FI_PROF_SM_ACTIVE", {"Hostname": "exp-b", "instance": "10.0.0.2:9400", "pod": "exp-b", **k8s, **mig_labels, "GPU_I_ID": "1"}),
    ]
    names = sorted({n for _, lab in labels for n in lab})
    series = pl.DataFrame(
        [{"series_id": i, "__name__": metric, **dict.fromkeys(names), **lab} for i, (metric, lab) in enumerate(labels)],
        schema={"series_id": pl.UInt32, "__name__": pl.String, **{n: pl.String for n in names}},
    )
    at = lambda s: T0 + timedelta(seconds=s)  # noqa: E731
    samples = pl.DataFrame(
        {
            "series_id": [0, 0, 1, 1, 2, 2, 3, 3, 4],
            "ts": [at(0), at(15), at(0), at(15), at(0), at(15), at(0), at(15), at(15)],
            "value": [0.4, 140737488355328.0, 350.0, 350.0, 0.6, 0.6, 350.0, 350.0, 0.41],
        },
        schema={"series_id": pl.UInt32, "ts": pl.Datetime("us"), "value": pl.Float64},
    )
    wide = pivot_samples(normalize_series(series, DCGM_FIELDS), samples)
    result = screen(conform_samples(wide, "c1").collect().to_dicts())
    got = result.clean.select("ts", "hostname", "gpu_i_id", "pod", "namespace", "sm_active", "power_w").rows()
    assert got == [
        (at(0), "exp-a", 1, "train-0", "ml", 0.4, None),
        (at(15), "exp-a", 1, "train-0", "ml", None, None),  # FP64 blank nulled
        (at(0), "exp-a", 2, "train-0", "ml", 0.6, None),
        (at(15), "exp-a", 2, "train-0", "ml", 0.6, None),
        (at(0), "exp-a", None, None, None, None, 350.0),  # the device rows: power once per GPU
        (at(15), "exp-a", None, None, None, None, 350.0),
    ]
    assert [r[1] for r in q_rows(result)] == ["DCGM blank sentinel 140737488355328 (FP64 BLANK)", DUPLICATE_REASON]
    assert json.loads(payload(result, 1)["extra_labels"]) == {"instance": "10.0.0.2:9400", "job": "gpu", "namespace": "gpu-operator", "pod": "exp-b"}
    assert result.counts["duplicate_rows"] == 1 and result.counts["mig_device_rows"] == 2
