"""Decoding one Prometheus matrix answer: the decoders cardhours ships and the alternatives
that lost to them.

    .venv/bin/python benchmarks/prom_decode.py [--series 64] [--points 5760] [--repeat 7]

The answer is what Prometheus 2.42 writes for ``metric[1d]`` over 64 GPUs at 15 s
(``{"metric":{...},"values":[[t,"v"],...]}``: dcgm-exporter labels, timestamps with the
millisecond jitter of real scrapes, ratios with five decimals, some NaN/Inf). Every
approach must give exactly the reference result (``json.loads``); best-of-N wall time and
CPU time are printed, then one JSON line. Results: benchmarks/README.md.

Approaches:
- ``json.loads``: the whole body, then a float per sample (the reference decoder, and the
  one for answers in any other layout).
- ``client DataFrame``: json.loads + prometheus-api-client's MetricRangeDataFrame.
- ``pyarrow`` (``decode_matrix``, the default decoder): labels via json.loads, each values
  list's brackets and quotes dropped, the numbers cut at the commas in place and cast by
  pyarrow (``csv_values``).
- ``pyarrow.csv`` (the default decoder before): each values list translated into CSV rows
  (``[`` to a newline, ``"`` and ``]`` dropped, ``,1`` ending a series), pyarrow's CSV reader.
- ``numba placed`` (``cardhours[fast]``): the compiled scan and decoder of ``place``, the
  samples written straight into the read's output.
- ``polars.read_csv``: the ``pyarrow.csv`` approach's CSV text through polars.
- ``numpy.fromstring``: the values lists flattened to ``t,v,t,v...`` and parsed by numpy,
  per series (no series-end marker needed).
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.csv as pacsv

from sources.prometheus.decode import Matrix, _scan, decode_matrix, decode_matrix_json, parse_labels
from sources.prometheus.decoders import numba_missing
from sources.prometheus.plan import Request

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


def located(body: bytes) -> tuple[list[dict[str, str]], list[tuple[int, int]]]:
    """Labels and values-list bounds of every series (the answer is in the compact layout)."""
    texts, bounds = _scan(body)
    return [parse_labels(text) for text in texts], bounds


def via_numba(body: bytes) -> object:
    """The numba decoder as a read runs it: scanned, placed, decoded into the output arrays
    (``LongSamples``: :func:`as_matrix` for the comparison, untimed)."""
    from sources.prometheus.assemble import Assembly
    from sources.prometheus.place import scan

    request = Request("DCGM_FI_PROF_SM_ACTIVE", T0 * 1000, T0 * 1000 + 86_400_000 + 1, 64)
    assembly = Assembly()
    assembly.add(scan(body, request, assembly.index))
    for job in assembly.close(request.metric):
        assembly.job_done(request.metric, job())
    return assembly.result()


def as_matrix(long) -> Matrix:
    counts = long.samples.group_by("series_id", maintain_order=True).len()["len"].to_numpy()
    labels = [{k: v for k, v in row.items() if k != "series_id" and v is not None} for row in long.series.to_dicts()]
    return Matrix(labels, counts, long.samples["ts"].dt.epoch("ms").to_numpy(), long.samples["value"].to_numpy())


def csv_rows(body: bytes, bounds: list[tuple[int, int]]) -> bytes:
    """The values lists as ``t,v,`` rows, each series' last row ending in ``1``."""
    return b"".join(body[a:b].translate(bytes.maketrans(b"[", b"\n"), b'"]') + b",1" for a, b in bounds)


def via_pyarrow_csv(body: bytes) -> Matrix:
    labels, bounds = located(body)
    text = csv_rows(body, bounds)
    table = pacsv.read_csv(
        pa.py_buffer(text),
        read_options=pacsv.ReadOptions(column_names=["t", "v", "last"], use_threads=False, block_size=len(text) + 1),
        parse_options=pacsv.ParseOptions(quote_char=False),
        convert_options=pacsv.ConvertOptions(
            column_types={"t": pa.float64(), "v": pa.float64(), "last": pa.int8()}, null_values=[""]
        ),
        memory_pool=pa.system_memory_pool(),
    )
    ends = np.flatnonzero(table.column("last").is_valid().to_numpy(zero_copy_only=False))
    ts_ms = np.rint(table.column("t").to_numpy() * 1000).astype(np.int64)
    return Matrix(labels, np.diff(ends, prepend=-1), ts_ms, table.column("v").to_numpy())


def via_polars(body: bytes) -> Matrix:
    labels, bounds = located(body)
    frame = pl.read_csv(
        csv_rows(body, bounds)[1:],
        has_header=False,
        new_columns=["t", "v", "last"],
        quote_char=None,
        schema={"t": pl.Float64, "v": pl.Float64, "last": pl.Int8},
    )
    ends = np.flatnonzero(frame["last"].is_not_null().to_numpy())
    ts_ms = np.rint(frame["t"].to_numpy() * 1000).astype(np.int64)
    return Matrix(labels, np.diff(ends, prepend=-1), ts_ms, frame["v"].to_numpy())


def via_numpy(body: bytes) -> Matrix:
    labels, bounds = located(body)
    counts, ts, values = [], [], []
    for a, b in bounds:
        flat = np.fromstring(body[a:b].translate(None, b'[]"').decode("ascii"), sep=",")
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
        "pyarrow (default)": decode_matrix,
        "pyarrow.csv (before)": via_pyarrow_csv,
        **({"numba placed ([fast])": via_numba} if numba_missing() is None else {}),
        "polars.read_csv": via_polars,
        "numpy.fromstring": via_numpy,
    }
    results = {}
    print(f"{args.series} series x {args.points} points, {len(body) / 1e6:.1f} MB of JSON\n")
    print(f"{'approach':28s} {'wall ms':>9s} {'cpu ms':>9s} {'MB/s':>7s}  exact")
    for name, fn in approaches.items():
        result = fn(body)
        exact = (
            "-"
            if name == "client DataFrame"
            else str(same(as_matrix(result) if fn is via_numba else result, reference))
        )
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
