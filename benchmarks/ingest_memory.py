"""Peak memory of one day's ingest, per daily DCGM asset, as the cluster grows.

    .venv/bin/python benchmarks/ingest_memory.py --gpus 250 1000 2000 --work /tmp/ingest-memory
    .venv/bin/python benchmarks/ingest_memory.py --gpus 1000 --gpus-per-shard 64 --work /tmp/ingest-memory

For each size: simulate one day (``cardhours simulate``: Parquet at 30 s, seed 7; reused when
``<work>/sim-<gpus>`` already holds it), write a config reading it (the simulator's, with the
warehouse moved to ``<work>/run-<gpus>``), then materialize the day's DCGM assets one after the
other, each in a fresh spawned process as Dagster's multiprocess executor runs a step:
``raw/dcgm_samples`` (read, screen, land), then its rollups ``stg_dcgm__gpu_hourly``,
``stg_dcgm__gpu_minutely`` and ``stg_dcgm__field_presence``. Each step reports its peak RSS
(``VmHWM``), its RSS once the imports are done (``base``) and its wall time.
``--gpus-per-shard`` sets ``[clusters.metrics] gpus_per_shard`` (left out: the default).

``--source prometheus``: the day is simulated as ``cardhours bench ingest`` simulates it (15 s,
seed 5; OpenMetrics back-filled with the real ``promtool``, reused from ``<work>/prom-<gpus>``),
served by the real ``prometheus``, and only ``raw/dcgm_samples`` is measured (the rollups read
the lake, as with files).

The last line is the result as JSON. Results: benchmarks/README.md ("Memory per worker").
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import re
import time
import tomllib
from concurrent.futures import ProcessPoolExecutor
from datetime import date
from pathlib import Path

DAY = date(2026, 10, 1)
SEED = 7
STEP = 30
ASSETS = (
    ("raw_dcgm_samples", "pipelines.assets.ingest", "raw_dcgm_samples"),
    ("gpu_hourly", "pipelines.assets.staging", "stg_dcgm__gpu_hourly_asset"),
    ("gpu_minutely", "pipelines.assets.staging", "stg_dcgm__gpu_minutely_asset"),
    ("field_presence", "pipelines.assets.staging", "stg_dcgm__field_presence_asset"),
)


def _status_mib(field: str) -> float:
    status = Path("/proc/self/status").read_text()
    return int(re.search(rf"^{field}:\s+(\d+) kB", status, re.M).group(1)) / 1024


def simulated(work: Path, gpus: int) -> Path:
    """The simulator's output directory for ``gpus`` GPUs and one day (simulated once)."""
    sim = work / f"sim-{gpus}"
    if not (sim / "metrics" / f"day={DAY.isoformat()}").is_dir():
        from simulate.run import simulate

        simulate(sim, gpus=gpus, days=1, start=DAY, seed=SEED, step_seconds=STEP, metrics_format="parquet")
    return sim


def site_config(sim: Path, run: Path, gpus_per_shard: int | None) -> Path:
    """The simulated site's config with absolute inputs and its warehouse in ``run``."""
    text = (sim / "cardhours.toml").read_text()
    text = text.replace('path = "cardhours.duckdb"', f'path = "{run / "cardhours.duckdb"}"', 1)
    text = text.replace('path = "metrics"', f'path = "{sim / "metrics"}"', 1)
    text = text.replace('sacct_file = "sacct.txt"', f'sacct_file = "{sim / "sacct.txt"}"', 1)
    if gpus_per_shard is not None:
        text = text.replace("step_seconds = 30\n", f"step_seconds = 30\ngpus_per_shard = {gpus_per_shard}\n", 1)
    tomllib.loads(text)
    run.mkdir(parents=True, exist_ok=True)
    config = run / "cardhours.toml"
    config.write_text(text)
    return config


def materialize_step(config: str, module: str, name: str, day: date = DAY) -> dict:
    """One asset for ``day``, in this (fresh) process: its peak RSS and time."""
    from importlib import import_module

    from dagster import materialize

    from pipelines.resources import CardhoursResource

    asset = getattr(import_module(module), name)
    base = _status_mib("VmRSS")
    started = time.perf_counter()
    result = materialize(
        [asset],
        partition_key=day.isoformat(),
        resources={"cardhours": CardhoursResource(config_path=config)},
        raise_on_error=True,
    )
    seconds = time.perf_counter() - started
    rows = [
        event.materialization.metadata["rows"].value
        for event in result.get_asset_materialization_events()
        if "rows" in event.materialization.metadata
    ]
    return {
        "peak_mib": round(_status_mib("VmHWM")),
        "base_mib": round(base),
        "seconds": round(seconds, 1),
        "rows": sum(rows),
    }


def measure(config: Path, day: date = DAY, assets: tuple = ASSETS) -> dict[str, dict]:
    context = multiprocessing.get_context("spawn")
    out = {}
    for label, module, name in assets:
        with ProcessPoolExecutor(max_workers=1, mp_context=context) as pool:
            out[label] = pool.submit(materialize_step, str(config), module, name, day).result()
    return out


def prometheus_run(work: Path, gpus: int, run: Path, gpus_per_shard: int | None) -> dict[str, dict]:
    """``raw/dcgm_samples`` of a day of ``gpus`` GPUs read from a real Prometheus."""
    from cardhours.bench.ingest import START, _prepare
    from cardhours.bench.prometheus_server import PrometheusServer

    root = work / f"prom-{gpus}"
    data_dir, _ = _prepare(gpus, 24, 15, root, lambda stage, done, total: None)
    with PrometheusServer(data_dir, root / "server") as server:
        text = (root / "sim" / "cardhours.toml").read_text()
        metrics = re.search(r"\[clusters\.metrics\]\n(?:[^\n]+\n)*", text).group(0)
        shard = f"gpus_per_shard = {gpus_per_shard}\n" if gpus_per_shard is not None else ""
        text = text.replace(
            metrics,
            f'[clusters.metrics]\nsource = "prometheus"\n{shard}\n[clusters.prometheus]\nurl = "{server.url}"\n'
            "step_seconds = 15\nscrape_interval_seconds = 15\n",
        )
        text = text.replace('path = "cardhours.duckdb"', f'path = "{run / "cardhours.duckdb"}"', 1)
        run.mkdir(parents=True, exist_ok=True)
        (run / "cardhours.toml").write_text(text)
        return measure(run / "cardhours.toml", START, ASSETS[:1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gpus", type=int, nargs="+", default=[250, 1000, 2000])
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--gpus-per-shard", type=int, default=None)
    parser.add_argument("--source", choices=["file", "prometheus"], default="file")
    parser.add_argument("--label", default="", help="a name for this run in the output (e.g. the branch)")
    args = parser.parse_args()
    results = {}
    for gpus in args.gpus:
        run = args.work / f"run-{args.source}-{gpus}{'-' + args.label if args.label else ''}"
        load = os.getloadavg()[0]
        if args.source == "prometheus":
            steps = prometheus_run(args.work, gpus, run, args.gpus_per_shard)
        else:
            steps = measure(site_config(simulated(args.work, gpus), run, args.gpus_per_shard))
        results[gpus] = {"load": round(load, 2), "steps": steps}
        print(f"{gpus} GPUs (load {load:.2f}):")
        for label, step in steps.items():
            print(
                f"  {label:16} peak {step['peak_mib']:6} MiB  base {step['base_mib']:5} MiB  "
                f"{step['seconds']:6.1f} s  {step['rows']:,} rows"
            )
    print(
        json.dumps(
            {"label": args.label, "source": args.source, "gpus_per_shard": args.gpus_per_shard, "results": results}
        )
    )


if __name__ == "__main__":
    main()
