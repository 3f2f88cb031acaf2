"""``cardhours bench ingest``: how fast cardhours reads dcgm-exporter series from a real Prometheus.

Steps: simulate ``gpus`` GPUs for ``ceil(hours / 24)`` whole days at ``step_seconds``
(OpenMetrics only), keep the first ``hours`` of it, back-fill that into a TSDB with the
real ``promtool``, start the real ``prometheus`` on it (``cardhours.bench.prometheus_server``),
warm the server with one untimed raw fetch, then time, one after the other and each in a
fresh process (``ingest_timers``): cardhours' ingest and a raw HTTP fetch of the same
requests with the same concurrency, alternately ``rounds`` times (the fastest of each
counts: other load on the machine only ever slows a round down), then
prometheus-api-client's DataFrame path once (it is the slow one).

``decoder`` picks cardhours' decoder (``auto``: numba with ``cardhours[fast]`` installed,
else pyarrow); the report names the one that ran and its target. Every sample back-filled
must come back from cardhours' ingest: a different count fails the bench (a fast wrong
answer is not a result). With ``workdir`` given, a finished
simulation and back-fill of the same size found there are reused, and the directory is
kept; a temporary work directory is removed unless ``keep``.
"""

from __future__ import annotations

import json
import math
import shutil
import tempfile
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from pathlib import Path

import polars as pl

from cardhours.bench.cpus import CpuSplitError, running_on, split_cpus
from cardhours.bench.ingest_report import cpu_model, print_report  # noqa: F401  (the CLI imports them from here)
from cardhours.bench.ingest_timers import measure
from cardhours.bench.prometheus_server import PrometheusHarnessError, PrometheusServer, backfill
from config import ConfigError, parse_config
from config.cluster import DEFAULT_GPUS_PER_SHARD
from sources.openmetrics import scan_lines
from sources.prometheus.decoders import DecoderUnavailable, choose

START = date(2026, 3, 2)  # a whole UTC day (and a 2-hour TSDB block boundary)
SEED = 5
CLUSTER = "bench"
Progress = Callable[[str, int, int], None]


class BenchError(RuntimeError):
    """The bench could not run, or cardhours' ingest returned the wrong number of samples."""


@dataclass(frozen=True)
class BenchResult:
    gpus: int
    hours: int
    step_seconds: int
    rounds: int
    workdir: Path
    kept: bool
    expected_samples: int
    timings: dict[str, dict]  # ours, raw, client -> ingest_timers result
    server_cpus: frozenset[int] | None = None  # --server-cpus: the server's CPUs, and the readers'
    reader_cpus: frozenset[int] | None = None
    decoder_asked: str = "auto"

    @property
    def decoder(self) -> str:
        """The decoder cardhours' reads used (numba or pyarrow)."""
        return self.timings["ours"]["decoder"]

    def summary(self) -> dict:
        return {
            "ours_s": round(self.timings["ours"]["seconds"], 3),
            "raw_fetch_s": round(self.timings["raw"]["seconds"], 3),
            "client_df_s": round(self.timings["client"]["seconds"], 3),
            "samples": self.timings["ours"]["samples"],
            "decoder": self.decoder,
        }


def truncate_openmetrics(source: Path, target: Path, end: datetime) -> int:
    """Copy ``source`` without the samples at or after ``end``; the samples kept."""
    lines = pl.scan_csv(
        source, has_header=False, separator="\x00", quote_char=None, new_columns=["line"], schema={"line": pl.String}
    )
    seconds = pl.col("line").str.extract(r"(\S+)$").cast(pl.Float64, strict=False)
    limit = (end - datetime(1970, 1, 1)).total_seconds()
    comment = pl.col("line").str.starts_with("#")
    kept = lines.filter(comment | (seconds < limit))
    kept.sink_csv(target, include_header=False, quote_style="never")
    return count_samples(target)


def count_samples(path: Path) -> int:
    lines = scan_lines(path)
    return lines.select(pl.len()).collect().item()


def _prepare(gpus: int, hours: int, step: int, root: Path, progress: Progress) -> tuple[Path, int]:
    """Simulate and back-fill into ``root`` (or reuse a finished run); (TSDB dir, samples)."""
    from simulate.run import simulate

    marker, data_dir = root / "bench.json", root / "tsdb"
    wanted = {"gpus": gpus, "hours": hours, "step_seconds": step, "start": START.isoformat(), "seed": SEED}
    if marker.exists() and json.loads(marker.read_text()).get("params") == wanted:
        return data_dir, json.loads(marker.read_text())["samples"]
    shutil.rmtree(data_dir, ignore_errors=True)
    days = math.ceil(hours / 24)
    sim = simulate(
        root / "sim",
        gpus=gpus,
        days=days,
        start=START,
        seed=SEED,
        step_seconds=step,
        metrics_format="om",
        cluster=CLUSTER,
        progress=lambda s, d, t: progress(f"simulate: {s}", d, t),
    )
    om = sim.om_path
    if hours < days * 24:
        progress(f"keep the first {hours} h", 0, 0)
        om = root / "sim" / f"metrics-{hours}h.om"
        samples = truncate_openmetrics(sim.om_path, om, sim.window_start + timedelta(hours=hours))
    else:
        samples = count_samples(om)
    progress(f"back-fill {samples:,} samples (promtool)", 0, 0)
    backfill([om], data_dir)
    marker.write_text(json.dumps({"params": wanted, "samples": samples}))
    return data_dir, samples


def prometheus_config(url: str, step: int, sim_dir: Path) -> dict:
    """The simulated site's own config (``sim_dir/cardhours.toml``) switched to read metrics from
    ``url``, validated like any site config; its [clusters.prometheus] settings."""
    data = tomllib.loads((sim_dir / "cardhours.toml").read_text())
    cluster = data["clusters"][0]
    cluster["metrics"] = {"source": "prometheus"}
    cluster["prometheus"] = {"url": url, "step_seconds": step, "scrape_interval_seconds": step}
    try:
        settings = parse_config(data, base_dir=sim_dir, source=sim_dir / "cardhours.toml")
    except ConfigError as exc:
        raise BenchError(str(exc)) from exc
    return settings.clusters[0].prometheus.model_dump(mode="json")


def _timed_rounds(
    config: dict, start: datetime, end: datetime, rounds: int, report: Progress, **read: object
) -> dict[str, dict]:
    """ours and raw alternately ``rounds`` times (the fastest of each kept, with the highest peak
    RSS of its rounds, and each round's ours / raw as ``ours["round_ratios"]``), then the client
    path once. ``read``: ``measure``'s decoder and gpus_per_shard."""
    runs: dict[str, list[dict]] = {"ours": [], "raw": []}
    for i in range(rounds):
        for name in runs:
            report(f"round {i + 1}/{rounds}: {name}", i, rounds + 1)
            runs[name].append(measure(name, config, start, end, **read))
    timings = {
        name: {**min(results, key=lambda t: t["seconds"]), "rss_mib": max(t["rss_mib"] for t in results)}
        for name, results in runs.items()
    }
    timings["ours"]["round_ratios"] = [
        o["seconds"] / r["seconds"] for o, r in zip(runs["ours"], runs["raw"], strict=True)
    ]
    report("client (once)", rounds, rounds + 1)
    timings["client"] = measure("client", config, start, end)
    return timings


def run_ingest_bench(
    gpus: int,
    hours: int,
    step_seconds: int = 15,
    workdir: Path | None = None,
    keep: bool = False,
    rounds: int = 3,
    progress: Progress | None = None,
    say: Callable[[str], None] = print,
    server_cpus: int | None = None,
    decoder: str = "auto",
    gpus_per_shard: int = DEFAULT_GPUS_PER_SHARD,
) -> BenchResult:
    """The bench (module docstring); with ``server_cpus``, the server runs on that many CPUs
    of its own and the timed readers on the others (``cpus``); cardhours reads (and the raw
    fetch fetches) in shards of at most ``gpus_per_shard`` GPUs."""
    report = progress or (lambda stage, done, total: None)
    try:
        pinned = split_cpus(server_cpus) if server_cpus is not None else (None, None)
        choose(decoder)  # before minutes of simulation: a decoder that cannot run here fails now
    except (CpuSplitError, ValueError, DecoderUnavailable) as exc:
        raise BenchError(str(exc)) from exc
    root = Path(workdir) if workdir is not None else Path(tempfile.mkdtemp(prefix="cardhours-bench-"))
    root.mkdir(parents=True, exist_ok=True)
    kept = keep or workdir is not None
    say(f"work directory: {root}" + ("" if kept else " (removed at the end; --keep keeps it)"))
    start = datetime(START.year, START.month, START.day)
    end = start + timedelta(hours=hours)
    try:
        data_dir, expected = _prepare(gpus, hours, step_seconds, root, report)
        with PrometheusServer(data_dir, root / "server", cpus=pinned[0]) as server, running_on(pinned[1]):
            config = prometheus_config(server.url, step_seconds, root / "sim")
            report("warm-up fetch (untimed)", 0, 0)
            measure("raw", config, start, end, gpus_per_shard=gpus_per_shard)
            timings = _timed_rounds(config, start, end, rounds, report, decoder=decoder, gpus_per_shard=gpus_per_shard)
    except PrometheusHarnessError as exc:
        raise BenchError(str(exc)) from exc
    finally:
        if not kept:
            shutil.rmtree(root, ignore_errors=True)
    if timings["ours"]["samples"] != expected:
        raise BenchError(f"cardhours read {timings['ours']['samples']:,} samples, {expected:,} were back-filled")
    return BenchResult(gpus, hours, step_seconds, rounds, root, kept, expected, timings, *pinned, decoder)
