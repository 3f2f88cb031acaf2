"""The table and summary ``cardhours bench ingest`` prints (``ingest.run_ingest_bench``'s result)."""

from __future__ import annotations

import json
import os
import statistics
from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table

from sources.prometheus.decoders import FAST_EXTRA, numba_missing

if TYPE_CHECKING:
    from cardhours.bench.ingest import BenchResult

TARGETS = {"numba": 1.25, "pyarrow": 1.6}  # ours / raw fetch, per decoder


def decoder_note(result: BenchResult) -> str:
    """Which decoder cardhours' reads used, and why."""
    if result.decoder == "numba":
        return (
            f"decoder: numba (cardhours[fast], compiled; metrics it handed to pyarrow in the fastest read: "
            f"{result.timings['ours']['fallbacks']})"
        )
    if result.decoder_asked == "pyarrow":
        return "decoder: pyarrow (asked for with --decoder pyarrow)"
    return f"decoder: pyarrow, the default install (numba cannot be imported: {numba_missing()}; {FAST_EXTRA})"


def cpu_model(timings: dict[str, dict]) -> float:
    """ours / raw as the CPU time alone predicts it when the server shares the reader's CPUs and
    keeps them busy: 1 + (ours' reader CPU - raw's) / (everything's CPU during the raw fetch)."""
    ours, raw = timings["ours"], timings["raw"]
    busy = raw["other_cpu_s"] + raw["cpu_s"]
    return 1.0 + (ours["cpu_s"] - raw["cpu_s"]) / busy if busy > 0 else float("nan")


def _cpus(cpus: frozenset[int] | None) -> str:
    return ", ".join(map(str, sorted(cpus or ())))


def print_report(result: BenchResult, out: Console) -> None:
    """The table, then the JSON summary as the last line."""
    labels = {"ours": "ours", "raw": "raw", "client": "client"}
    raw = result.timings["raw"]["seconds"]
    table = Table(
        title=f"ingest of {result.gpus} GPUs x {result.hours} h at {result.step_seconds} s "
        f"({result.expected_samples:,} samples back-filled; ours and raw: best of {result.rounds})"
    )
    for column in ("path", "s", "x raw", "samples", "req", "par", "MiB", "cpu", "srv", "RSS", "base"):
        table.add_column(column, justify="left" if column == "path" else "right", no_wrap=True)
    for name, label in labels.items():
        t = result.timings[name]
        table.add_row(
            label,
            f"{t['seconds']:.2f}",
            f"{t['seconds'] / raw:.2f}",
            "-" if t["samples"] is None else f"{t['samples']:,}",
            str(t["requests"]),
            str(t.get("in_flight", "-")),
            "-" if t["mib"] is None else f"{t['mib']:.0f}",
            f"{t['cpu_s']:.1f}",
            f"{t['other_cpu_s']:.1f}",
            f"{t['rss_mib']:.0f}",
            f"{t['base_rss_mib']:.0f}",
        )
    # the whole table also when the output is not a terminal (rich then assumes 80 columns)
    Console(file=out.file, width=max(out.width, 132), soft_wrap=True).print(table)
    out.print(
        "ours: cardhours' PrometheusMetricsSource.read_long_shards, as the ingest asset reads a day "
        f"({result.timings['ours'].get('gpu_shards', 1)} shard(s) of GPUs). raw: a raw HTTP fetch of the same "
        "requests with the same concurrency, bodies read as ours reads them (into reused buffers) and discarded. "
        "client: prometheus-api-client get_metric_range_data + MetricRangeDataFrame. "
        "s: wall seconds. par: requests in flight (max_parallel_requests; unset: 4, or as many as this machine's "
        "CPUs when the server runs on it). MiB: response bytes. cpu: CPU seconds of the reading process; "
        "srv: CPU seconds of "
        f"everything else on the machine (the Prometheus server), {os.cpu_count()} CPUs. RSS: peak MiB of the "
        "reading process (base: after imports and warm-up).",
        highlight=False,
    )
    if result.server_cpus is not None:
        out.print(
            f"server pinned to CPU(s) {_cpus(result.server_cpus)}, the timed readers to CPU(s) "
            f"{_cpus(result.reader_cpus)} (--server-cpus: a server on CPUs of its own, as on a "
            "separate machine)",
            highlight=False,
        )
    else:
        out.print(
            "server and readers share every CPU (--server-cpus N gives the server CPUs of its own)", highlight=False
        )
    ours, client = result.timings["ours"]["seconds"], result.timings["client"]["seconds"]
    out.print(decoder_note(result), highlight=False, markup=False)
    out.print(
        f"ours / raw fetch = {ours / raw:.2f} (target <= {TARGETS[result.decoder]} with the {result.decoder} "
        f"decoder); client DF / ours = {client / ours:.1f} (target >= 4)",
        highlight=False,
    )
    paired = sorted(result.timings["ours"].get("round_ratios", []))
    if paired:
        out.print(
            f"each round's ours / the raw fetch right after it: median {statistics.median(paired):.2f}, "
            f"{paired[0]:.2f}-{paired[-1]:.2f} over {len(paired)} rounds (less sensitive to one fast "
            "raw round than the ratio of the fastest rounds above)",
            highlight=False,
        )
    if result.server_cpus is None:
        out.print(
            f"CPU model: {cpu_model(result.timings):.2f} = 1 + (ours cpu - raw cpu) / (srv + raw cpu) of the raw "
            "fetch: what the reader's extra CPU alone costs while the server keeps the same CPUs busy "
            "(benchmarks/README.md)",
            highlight=False,
        )
    out.print(f"work directory: {result.workdir}" + (" (kept)" if result.kept else " (removed)"), highlight=False)
    out.print(json.dumps(result.summary()), highlight=False, soft_wrap=True)
