"""Decoding a Prometheus matrix response: ways to get columns without a Python object per sample.

    .venv/bin/python benchmarks/prom_decode.py [--series 64] [--points 5760] [--repeat 7]

The response is what Prometheus 2.42 writes for ``metric[1d]`` over 64 GPUs at 15 s
(``{"metric":{...},"values":[[t,"v"],...]}``: dcgm-exporter labels, timestamps with the
millisecond jitter of real scrapes, ratios with five decimals, some NaN/Inf). Every
approach must give exactly the reference result (``json.loads``); best-of-N wall time and
CPU time (CSV readers use threads) are printed, then one JSON line.

Approaches:
- ``json.loads``: the whole body, then a float per sample (the reference).
- ``client DataFrame``: json.loads + prometheus-api-client's MetricRangeDataFrame.
- ``scan + pyarrow.csv`` (what ``decode_matrix`` does): labels via json.loads, values lists
  joined and translated into CSV rows, pyarrow's multi-threaded CSV reader.
- ``scan + polars.read_csv``: the same CSV text through polars.
- ``scan + numpy.fromstring``: the values lists flattened to ``t,v,t,v...`` and parsed by numpy,
  per series (no series-end marker needed).
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable

import numpy as np
import polars as pl

from cardhours.sources.prometheus.decode import Matrix, _locate, csv_text, decode_matrix, decode_matrix_json

T0 = 1772409600


def make_response(n_series: int, n_points: int, seed: int = 0) -> bytes:
    """A matrix body in Prometheus's exact encoding (timestamps ``s[.mmm]``, shortest floats)."""
    rng = np.random.default_rng(seed)
    parts = []
    for s in range(n_series):
        jitter = rng.integers(0, 1000)
        ts = T0 * 1000 + jitter + 15_000 * np.arange(n_points)
        values = np.round(rng.random(n_points), 5)
        values[rng.random(n_points) < 0.001] = np.nan
        stamps = [f"{t // 1000}.{t % 1000:03d}" if t % 1000 else str(t // 1000) for t in ts.tolist()]
        texts = ["NaN" if v != v else repr(v) if v != int(v) else str(int(v)) for v in values.tolist()]
        metric = {
            "Hostname": f"gpu-{s // 8:03d}",
            "UUID": f"GPU-{s:08x}-1b2c-4d5e",
            "__name__": "DCGM_FI_PROF_SM_ACTIVE",
            "device": f"nvidia{s % 8}",
            "gpu": str(s % 8),
            "hpc_job": str(4_000_000 + s),
            "modelName": "NVIDIA H100 80GB HBM3",
            "pci_bus_id": f"00000000:{0x18 + s % 8:02X}:00.0",
        }
        values_text = ",".join(f'[{t},"{v}"]' for t, v in zip(stamps, texts, strict=True))
        parts.append(f'{{"metric":{json.dumps(metric, separators=(",", ":"))},"values":[{values_text}]}}')
    return ('{"status":"success","data":{"resultType":"matrix","result":[' + ",".join(parts) + "]}}").encode()


def via_polars(body: bytes) -> Matrix:
    labels, spans, _ = _locate(body)
    frame = pl.read_csv(
        csv_text(spans)[1:],
        has_header=False,
        new_columns=["t", "v", "last"],
        quote_char=None,
        schema={"t": pl.Float64, "v": pl.Float64, "last": pl.Int8},
    )
    ends = np.flatnonzero(frame["last"].is_not_null().to_numpy())
    ts_ms = np.rint(frame["t"].to_numpy() * 1000).astype(np.int64)
    return Matrix(labels, np.diff(ends, prepend=-1), ts_ms, frame["v"].to_numpy())


def via_numpy(body: bytes) -> Matrix:
    labels, spans, _ = _locate(body)
    counts, ts, values = [], [], []
    for span in spans:
        flat = np.fromstring(bytes(span).translate(None, b'[]"').decode("ascii"), sep=",")
        counts.append(len(flat) // 2)
        ts.append(np.rint(flat[0::2] * 1000).astype(np.int64))
        values.append(flat[1::2])
    return Matrix(labels, np.array(counts), np.concatenate(ts), np.concatenate(values))


def via_client_dataframe(body: bytes) -> object:
    from prometheus_api_client import MetricRangeDataFrame

    return MetricRangeDataFrame(json.loads(body)["data"]["result"])


def same(a: Matrix, b: Matrix) -> bool:
    return (
        a.labels == b.labels
        and np.array_equal(a.counts, b.counts)
        and np.array_equal(a.ts_ms, b.ts_ms)
        and np.array_equal(a.values, b.values, equal_nan=True)
    )


def best_of(fn: Callable[[bytes], object], body: bytes, repeat: int) -> tuple[float, float]:
    wall, cpu = [], []
    for _ in range(repeat):
        w, c = time.perf_counter(), time.process_time()
        fn(body)
        wall.append(time.perf_counter() - w)
        cpu.append(time.process_time() - c)
    return min(wall), min(cpu)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--series", type=int, default=64)
    parser.add_argument("--points", type=int, default=5760)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    body = make_response(args.series, args.points)
    reference = decode_matrix_json(body)
    approaches: dict[str, Callable[[bytes], object]] = {
        "json.loads (reference)": decode_matrix_json,
        "client DataFrame": via_client_dataframe,
        "scan + pyarrow.csv (ours)": decode_matrix,
        "scan + polars.read_csv": via_polars,
        "scan + numpy.fromstring": via_numpy,
    }
    results = {}
    print(f"{args.series} series x {args.points} points, {len(body) / 1e6:.1f} MB of JSON\n")
    print(f"{'approach':28s} {'wall ms':>9s} {'cpu ms':>9s} {'MB/s':>7s}  exact")
    for name, fn in approaches.items():
        exact = "-" if name == "client DataFrame" else str(same(fn(body), reference))
        wall, cpu = best_of(fn, body, args.repeat if "json" not in name and "client" not in name else 2)
        results[name] = {
            "wall_ms": round(wall * 1000, 1),
            "cpu_ms": round(cpu * 1000, 1),
            "mb_per_s": round(len(body) / wall / 1e6),
        }
        print(f"{name:28s} {wall * 1000:9.1f} {cpu * 1000:9.1f} {len(body) / wall / 1e6:7.0f}  {exact}")
    print(json.dumps({"bytes": len(body), "samples": int(reference.counts.sum()), "results": results}))


if __name__ == "__main__":
    main()
