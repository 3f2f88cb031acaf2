"""pivot_samples: long Prometheus samples -> wide raw rows, exact and ordered."""

from __future__ import annotations

import random
import resource
import time
from datetime import datetime, timedelta

import numpy as np
import polars as pl
import pytest

import sources.series_pivot as series_pivot
from contracts.exporters import DCGM
from contracts.schemas import LABEL_COLUMNS, SAMPLE_VALUE_COLUMNS
from sources.series_labels import normalize_series
from sources.series_pivot import SCHEMA, pivot_samples

T0 = datetime(2026, 3, 1)
# The brief's order, then the other labels as tie-breakers (nulls first).
ORDER = [
    "hostname",
    "gpu",
    "gpu_i_id",
    "hpc_job",
    "pod",
    "extra_labels",
    "uuid",
    "model_name",
    "pci_bus_id",
    "device",
    "gpu_i_profile",
    "namespace",
    "container",
]
METRIC = {field: metric for metric, field in DCGM.metric_signals.items()}


def long_samples(series: list[dict], samples: list[tuple[int, int, float]]) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(LongSamples.series, LongSamples.samples) from label dicts (with "field") and (series_id, second, value)."""
    names = sorted({k for s in series for k in s if k not in ("field", "series_id")})
    rows = [
        {
            "series_id": s["series_id"],
            "__name__": METRIC[s["field"]],
            **dict.fromkeys(names),
            **{k: v for k, v in s.items() if k != "field"},
        }
        for s in series
    ]
    frame = pl.DataFrame(rows, schema={"series_id": pl.UInt32, "__name__": pl.String, **{n: pl.String for n in names}})
    sample_frame = pl.DataFrame(
        {
            "series_id": [s for s, _, _ in samples],
            "ts": [T0 + timedelta(seconds=sec) for _, sec, _ in samples],
            "value": [v for _, _, v in samples],
        },
        schema={"series_id": pl.UInt32, "ts": pl.Datetime("us"), "value": pl.Float64},
    ).sort("series_id", "ts")
    return frame, sample_frame


def reference_pivot(normalized: pl.DataFrame, samples: pl.DataFrame) -> list[tuple]:
    """The slow obvious pivot: a dict per (labels, ts)."""
    labels = {r["series_id"]: r for r in normalized.iter_rows(named=True)}
    wide: dict[tuple, dict] = {}
    for sid, ts, value in samples.iter_rows():
        s = labels[sid]
        key = tuple(s[c] for c in LABEL_COLUMNS) + (ts,)
        wide.setdefault(key, {})[s["field"]] = value

    def order(item):
        key = dict(zip([*LABEL_COLUMNS, "ts"], item[0], strict=True))
        return tuple((key[c] is not None, key[c] if key[c] is not None else 0) for c in ORDER) + (key["ts"],)

    out = []
    for key, values in sorted(wide.items(), key=order):
        named = dict(zip([*LABEL_COLUMNS, "ts"], key, strict=True))
        out.append(tuple(named[c] if c in named else values.get(c) for c in SCHEMA))
    return out


def random_case(seed: int, n_gpus: int = 6, n_ts: int = 40) -> tuple[pl.DataFrame, pl.DataFrame]:
    rng = random.Random(seed)
    series, samples, sid = [], [], 0
    for g in range(n_gpus):
        host = rng.choice(["n1", "n2", None])
        for job in rng.sample(["11", "12", None], k=2):
            mig = rng.choice([None, "1", "2"])
            for field in rng.sample(SAMPLE_VALUE_COLUMNS, k=rng.randint(1, 5)):
                sid += 1
                labels = {
                    "series_id": sid,
                    "field": field,
                    "gpu": str(g % 4),
                    "UUID": f"GPU-{g}",
                    "hpc_job": job,
                    "GPU_I_ID": mig,
                }
                if host:
                    labels["Hostname"] = host
                if rng.random() < 0.3:
                    labels["instance"] = rng.choice(["a:1", "b:1"])
                series.append(labels)
                for sec in sorted(rng.sample(range(n_ts), k=rng.randint(1, n_ts))):
                    samples.append((sid, sec * 15, rng.choice([rng.random(), float(sec), float("nan")])))
    return long_samples(series, samples)


@pytest.mark.parametrize("seed", range(8))
def test_matches_the_obvious_pivot_exactly(seed: int) -> None:
    series, samples = random_case(seed)
    normalized = normalize_series(series, DCGM)
    out = pivot_samples(normalized, samples)
    assert out.schema == pl.Schema(SCHEMA)
    got = out.rows()
    want = reference_pivot(normalized, samples)
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):  # NaN-aware equality
        assert all((a == b) or (a != a and b != b) for a, b in zip(g, w, strict=True)), (g, w)
    # every sample landed exactly once
    assert sum(out.select(pl.col(SAMPLE_VALUE_COLUMNS).count()).row(0)) == samples.height


def test_the_two_key_fallback_gives_the_same_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    series, samples = random_case(3)
    normalized = normalize_series(series, DCGM)
    fast = pivot_samples(normalized, samples)
    monkeypatch.setattr(series_pivot, "_KEY_BITS", 4)
    assert pivot_samples(normalized, samples).equals(fast, null_equal=True)


def test_sparse_series_ids_take_the_join_path_with_the_same_result() -> None:
    series, samples = random_case(5)
    normalized = normalize_series(series, DCGM)
    dense = pivot_samples(normalized, samples)
    shift = pl.col("series_id") + 4_000_000_000
    sparse = pivot_samples(normalized.with_columns(shift), samples.with_columns(shift))
    assert sparse.equals(dense, null_equal=True)
    with pytest.raises(ValueError, match=r"1 samples belong to series not in normalized: \[4000000000\]"):
        pivot_samples(
            normalized.with_columns(shift),
            samples.with_columns(shift).vstack(
                samples.head(1).with_columns(pl.lit(4_000_000_000, dtype=pl.UInt32).alias("series_id"))
            ),
        )


def test_one_row_per_label_set_and_ts_ordered_by_host_gpu_instance_job() -> None:
    series, samples = long_samples(
        [
            {"series_id": 1, "field": "sm_active", "Hostname": "n2", "gpu": "0", "hpc_job": "9"},
            {"series_id": 2, "field": "power_w", "Hostname": "n2", "gpu": "0", "hpc_job": "9"},
            {"series_id": 3, "field": "sm_active", "Hostname": "n1", "gpu": "1", "GPU_I_ID": "2", "hpc_job": "9"},
            {"series_id": 4, "field": "sm_active", "Hostname": "n1", "gpu": "1", "hpc_job": "8"},
            {"series_id": 5, "field": "sm_active", "Hostname": "n1", "gpu": "1"},
            {"series_id": 6, "field": "sm_active", "Hostname": "n1", "gpu": "0", "hpc_job": "10"},
            {"series_id": 7, "field": "sm_active", "Hostname": "n1", "gpu": "1", "GPU_I_ID": "1", "hpc_job": "7"},
        ],
        [
            (1, 15, 0.1),
            (2, 0, 300.0),
            (2, 15, 310.0),
            (1, 0, 0.2),
            (3, 0, 0.3),
            (4, 0, 0.4),
            (5, 0, 0.5),
            (6, 30, 0.6),
            (7, 0, 0.7),
        ],
    )
    out = pivot_samples(normalize_series(series, DCGM), samples)
    assert out.select("hostname", "gpu", "gpu_i_id", "hpc_job", "ts", "sm_active", "power_w").rows() == [
        ("n1", 0, None, "10", T0 + timedelta(seconds=30), 0.6, None),
        ("n1", 1, None, None, T0, 0.5, None),
        ("n1", 1, None, "8", T0, 0.4, None),
        ("n1", 1, 1, "7", T0, 0.7, None),
        ("n1", 1, 2, "9", T0, 0.3, None),
        ("n2", 0, None, "9", T0, 0.2, 300.0),
        ("n2", 0, None, "9", T0 + timedelta(seconds=15), 0.1, 310.0),
    ]
    assert out.columns == list(SCHEMA)
    assert out["gpu_util"].null_count() == out.height  # a field nobody exports is a null column


def test_same_labels_and_field_from_two_series_merge_when_equal() -> None:
    # An exporter upgrade renamed Hostname -> hostname: two Prometheus series, one identity.
    series, samples = long_samples(
        [
            {"series_id": 1, "field": "sm_active", "Hostname": "n1", "gpu": "0"},
            {"series_id": 2, "field": "sm_active", "hostname": "n1", "gpu": "0"},
        ],
        [(1, 0, 0.1), (1, 15, 0.2), (2, 15, 0.2), (2, 30, float("nan")), (1, 30, float("nan")), (2, 45, 0.4)],
    )
    out = pivot_samples(normalize_series(series, DCGM), samples)
    assert out["ts"].to_list() == [T0 + timedelta(seconds=s) for s in (0, 15, 30, 45)]
    assert out["sm_active"].to_list()[:2] == [0.1, 0.2] and out["sm_active"].to_list()[3] == 0.4
    assert np.isnan(out["sm_active"][2])


def test_same_labels_and_field_with_different_values_raise_naming_the_series() -> None:
    series, samples = long_samples(
        [
            {"series_id": 1, "field": "sm_active", "Hostname": "n1", "gpu": "0"},
            {"series_id": 2, "field": "sm_active", "hostname": "n1", "gpu": "0"},
        ],
        [(1, 15, 0.2), (2, 15, 0.3)],
    )
    with pytest.raises(ValueError, match=r"1 samples differ.*'series_id': 1.*'series_id': 2.*'hostname': 'n1'"):
        pivot_samples(normalize_series(series, DCGM), samples)


def test_two_samples_at_one_ts_in_one_series_raise() -> None:
    series, samples = long_samples([{"series_id": 1, "field": "sm_active", "gpu": "0"}], [(1, 0, 0.1), (1, 0, 0.2)])
    with pytest.raises(ValueError, match="same timestamp"):
        pivot_samples(normalize_series(series, DCGM), samples)


def test_samples_of_unknown_series_raise() -> None:
    series, samples = long_samples([{"series_id": 1, "field": "sm_active", "gpu": "0"}], [(1, 0, 0.1), (5, 0, 0.2)])
    with pytest.raises(ValueError, match=r"1 samples belong to series not in normalized: \[5\]"):
        pivot_samples(normalize_series(series, DCGM), samples)


def test_no_samples_gives_an_empty_frame_with_the_schema() -> None:
    series, samples = long_samples([{"series_id": 1, "field": "sm_active", "gpu": "0"}], [])
    out = pivot_samples(normalize_series(series, DCGM), samples)
    assert out.height == 0 and out.schema == pl.Schema(SCHEMA)


def synthetic_day(n_gpus: int, n_ts: int, step_s: int = 15) -> tuple[pl.DataFrame, pl.DataFrame]:
    """dcgm-exporter-like LongSamples: 7 fields per GPU, 8 GPUs per host, a job per 4 GPUs."""
    fields = ["gpu_util", "gr_engine_active", "sm_active", "tensor_active", "fb_used_mib", "power_w", "energy_mj"]
    g = np.tile(np.arange(n_gpus), len(fields))
    series = pl.DataFrame(
        {
            "series_id": np.arange(len(g), dtype=np.uint32),
            "__name__": np.repeat([METRIC[f] for f in fields], n_gpus),
            "Hostname": [f"node{i // 8:04d}" for i in g],
            "gpu": (g % 8).astype(str),
            "UUID": [f"GPU-{i:08x}" for i in g],
            "modelName": "NVIDIA H100 80GB HBM3",
            "hpc_job": (1000 + g // 4).astype(str),
            "instance": [f"10.0.{i // 2048}.{i // 8 % 256}:9400" for i in g],
            "job": "dcgm",
        }
    )
    ts = np.datetime64(T0, "us").astype(np.int64) + np.arange(n_ts, dtype=np.int64) * step_s * 1_000_000
    samples = pl.DataFrame(
        {
            "series_id": np.repeat(series["series_id"].to_numpy(), n_ts),
            "ts": pl.Series(np.tile(ts, len(g))).cast(pl.Datetime("us")),
            "value": np.random.default_rng(0).random(len(g) * n_ts),
        }
    )
    return series, samples


def test_pivot_of_a_million_samples_is_fast() -> None:
    series, samples = synthetic_day(n_gpus=150, n_ts=960)  # 1.008 M samples -> 144 k rows
    normalized = normalize_series(series, DCGM)
    started = time.perf_counter()
    out = pivot_samples(normalized, samples)
    elapsed = time.perf_counter() - started
    assert out.height == 150 * 960
    assert out.select(pl.col(SAMPLE_VALUE_COLUMNS).count()).sum_horizontal().item() == samples.height
    assert elapsed < 2.0, f"pivot of 1 M samples took {elapsed:.2f} s"


@pytest.mark.slow
def test_bench_a_1000_gpu_day() -> None:  # needs ~5 GB RAM; CI has 24 GiB
    """1000 GPUs x 5760 timestamps x 7 fields = 40.3 M samples -> 5.76 M rows, then screened."""
    from sources.metrics import conform_samples
    from transforms.helpers.dcgm_quality import screen_samples

    series, samples = synthetic_day(n_gpus=1000, n_ts=5760)
    started = time.perf_counter()
    normalized = normalize_series(series, DCGM)
    wide = pivot_samples(normalized, samples)
    pivot_s = time.perf_counter() - started
    del samples
    raw = conform_samples(wide, "bench").collect()
    del wide
    started = time.perf_counter()
    result = screen_samples(raw, "2026-03-01")
    screen_s = time.perf_counter() - started
    peak_gb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6
    print(
        f"\nnormalize+pivot {pivot_s:.2f} s, screen {screen_s:.2f} s, peak RSS {peak_gb:.2f} GB, "
        f"rows {result.clean.height}"
    )
    assert result.clean.height == 5_760_000
    assert pivot_s < 30 and screen_s < 30
