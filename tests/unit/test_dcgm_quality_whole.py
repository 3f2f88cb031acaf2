"""screen_samples as a whole: all problems together, clean pass-through, speed, composed with normalize/pivot."""

from __future__ import annotations

import json
import time
from datetime import date, timedelta

import numpy as np
import polars as pl
import pytest

from contracts.schemas import RAW_SAMPLE_SCHEMA, SAMPLE_VALUE_COLUMNS
from tests.unit.dcgm_quality_cases import KEY, T0, mig, payload, q_rows, sample, screen
from transforms.helpers.dcgm_quality import DUPLICATE_REASON, quarantine_share, screen_samples


def test_all_problems_together_exact_counts_share_and_determinism() -> None:
    rows = [sample(s, sm_active=0.5, power_w=200.0, gpu_util=50.0) for s in range(0, 150, 15)]  # 10 rows, 30 values
    rows += [sample(0, hostname="n9-restarted", sm_active=0.5, power_w=200.0)]  # dropped duplicate: 2 values
    rows[1]["sm_active"] = 1.5
    rows[2]["power_w"] = 4294967295.0
    rows[3]["gpu_util"] = float("nan")
    rows += [mig(0, 1, sm_active=0.2, power_w=100.0), mig(0, 2, sm_active=0.3, power_w=100.0)]  # 4 values
    result = screen(rows)
    assert result.counts == {
        "total_rows": 13,
        "input_values": 36,
        "clean_rows": 13,
        "duplicate_rows": 1,
        "duplicate_values": 2,
        "sentinel_values": 1,
        "out_of_range_values": 2,
        "non_finite_values": 1,
        "mig_device_rows": 1,
        "mig_device_values_moved": 2,
        "mig_device_field_disagreement": 0,
        "mig_parent_rows_filled": 0,
        "quarantine_groups": 5,
        "quarantined_values": 5,
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
    frame = frame.with_columns(
        pl.when(pl.int_range(pl.len()) % 1000 == 0).then(2.0).otherwise("sm_active").alias("sm_active")
    )
    frame = pl.concat([frame, pl.DataFrame(schema=RAW_SAMPLE_SCHEMA)], how="diagonal_relaxed").select(
        list(RAW_SAMPLE_SCHEMA)
    )
    started = time.perf_counter()
    result = screen_samples(frame, KEY)
    elapsed = time.perf_counter() - started
    assert result.counts["out_of_range_values"] == 1000 and result.quarantine.height == n_gpus
    assert elapsed < 2.0, f"screening 1 M rows took {elapsed:.2f} s"


def test_normalize_pivot_screen_compose_on_exporter_like_series() -> None:
    from contracts.exporters import DCGM
    from sources.metrics import conform_samples
    from sources.series_labels import normalize_series
    from sources.series_pivot import pivot_samples

    k8s = {"exported_pod": "train-0", "exported_namespace": "ml", "namespace": "gpu-operator", "job": "gpu"}
    mig_labels = {"gpu": "0", "UUID": "GPU-m", "GPU_I_PROFILE": "3g.40gb"}
    labels = [  # series_id -> (metric, labels)
        (
            "DCGM_FI_PROF_SM_ACTIVE",
            {"Hostname": "exp-a", "instance": "10.0.0.1:9400", "pod": "exp-a", **k8s, **mig_labels, "GPU_I_ID": "1"},
        ),
        (
            "DCGM_FI_DEV_POWER_USAGE",
            {"Hostname": "exp-a", "instance": "10.0.0.1:9400", "pod": "exp-a", **k8s, **mig_labels, "GPU_I_ID": "1"},
        ),
        (
            "DCGM_FI_PROF_SM_ACTIVE",
            {"Hostname": "exp-a", "instance": "10.0.0.1:9400", "pod": "exp-a", **k8s, **mig_labels, "GPU_I_ID": "2"},
        ),
        (
            "DCGM_FI_DEV_POWER_USAGE",
            {"Hostname": "exp-a", "instance": "10.0.0.1:9400", "pod": "exp-a", **k8s, **mig_labels, "GPU_I_ID": "2"},
        ),
        # the exporter restarted as exp-b: same GPU instance 1, new Hostname/instance/pod
        (
            "DCGM_FI_PROF_SM_ACTIVE",
            {"Hostname": "exp-b", "instance": "10.0.0.2:9400", "pod": "exp-b", **k8s, **mig_labels, "GPU_I_ID": "1"},
        ),
    ]
    names = sorted({n for _, lab in labels for n in lab})
    series = pl.DataFrame(
        [{"series_id": i, "__name__": metric, **dict.fromkeys(names), **lab} for i, (metric, lab) in enumerate(labels)],
        schema={"series_id": pl.UInt32, "__name__": pl.String, **{n: pl.String for n in names}},
    )

    def at(s):
        return T0 + timedelta(seconds=s)

    samples = pl.DataFrame(
        {
            "series_id": [0, 0, 1, 1, 2, 2, 3, 3, 4],
            "ts": [at(0), at(15), at(0), at(15), at(0), at(15), at(0), at(15), at(15)],
            "value": [0.4, 140737488355328.0, 350.0, 350.0, 0.6, 0.6, 350.0, 350.0, 0.41],
        },
        schema={"series_id": pl.UInt32, "ts": pl.Datetime("us"), "value": pl.Float64},
    )
    wide = pivot_samples(normalize_series(series, DCGM), samples)
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
    assert json.loads(payload(result, 1)["extra_labels"]) == {
        "instance": "10.0.0.2:9400",
        "job": "gpu",
        "namespace": "gpu-operator",
        "pod": "exp-b",
    }
    assert result.counts["duplicate_rows"] == 1 and result.counts["mig_device_rows"] == 2
