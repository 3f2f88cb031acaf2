"""Raw DCGM samples: a DuckDB table vs Hive-partitioned Parquet, and the minute rollup in SQL vs polars.

    .venv/bin/python benchmarks/raw_storage.py                 # 1000 GPUs x 1 day at 15 s (5.76 M rows)
    .venv/bin/python benchmarks/raw_storage.py --gpus 64 --reruns 1

One simulated day (simulate.samples.generate_day, RAW_SAMPLE_SCHEMA) is landed
(a) in `raw.dcgm_samples` of a fresh warehouse through warehouse.replace_partition, rerun
(the idempotent replace), then a second day added; (b) as
`cluster=<c>/day=<d>/part-0.parquet` written next to its name and renamed over it (the
simulator's encodings), rerun likewise. Then the hourly and minute rollups are timed on
each: from DuckDB (SQL in place, or rows read into polars) and from Parquet (DuckDB
read_parquet, polars scan_parquet). Results: docs/storage.md. The last line is JSON.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from datetime import date, datetime, timedelta
from functools import partial
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow.parquet as pq
from polars.testing import assert_frame_equal
from sim_rate import build_allocations, build_inventory

from simulate.parquet_writer import COLUMN_ENCODING, COMPRESSION, COMPRESSION_LEVEL, ROW_GROUP_ROWS
from simulate.samples import generate_day
from transforms.staging.stg_dcgm__gpu_hourly import stg_dcgm__gpu_hourly
from transforms.staging.stg_dcgm__gpu_minutely import GROUP_KEY, stg_dcgm__gpu_minutely, stg_dcgm__gpu_minutely_sql
from warehouse import connect, read_frame, replace_partition

CLUSTER = "bench"
DAY = date(2026, 3, 2)
MINUTE_COLUMNS = sorted(
    {
        *GROUP_KEY,
        "ts",
        "gpu_util",
        "gr_engine_active",
        "sm_active",
        "sm_occupancy",
        "tensor_active",
        "dram_active",
        "fb_used_mib",
        "power_w",
    }
)
ROLLUP_SQL_TABLE = "FROM raw.dcgm_samples"


ROUNDS = 5  # rollups: contenders run interleaved, this many rounds; median and best reported


def timed(fn: Callable[[], object]) -> tuple[float, object]:
    started = time.perf_counter()
    value = fn()
    return round(time.perf_counter() - started, 3), value


def race(contenders: dict[str, Callable[[], object]], rounds: int) -> dict[str, dict[str, float]]:
    """Run the contenders in turn, ``rounds`` times (the machine's noise hits all alike)."""
    times: dict[str, list[float]] = {name: [] for name in contenders}
    for _ in range(rounds):
        for name, fn in contenders.items():
            times[name].append(timed(fn)[0])
    return {name: {"median_s": round(statistics.median(t), 3), "best_s": min(t)} for name, t in times.items()}


def mib(*paths: Path) -> float:
    return round(sum(p.stat().st_size for p in paths if p.exists()) / 2**20, 1)


def simulate(n_gpus: int, step: int, seed: int) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    inventory = build_inventory(n_gpus, rng)
    start = datetime.combine(DAY, datetime.min.time()) - timedelta(days=1)
    allocations = build_allocations(inventory, start, 3, rng)
    return generate_day(inventory, allocations, DAY, step, seed, CLUSTER)


def next_day(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.with_columns(pl.col("ts") + timedelta(days=1), pl.col("day") + timedelta(days=1))


def bench_duckdb(frame: pl.DataFrame, root: Path, reruns: int) -> dict:
    path = root / "bench.duckdb"
    files = (path, path.with_name(path.name + ".wal"))
    out: dict = {}
    with connect(path) as conn:
        out["empty_mib"] = mib(*files)
        partition = {"cluster": CLUSTER, "day": DAY}
        out["write_s"], _ = timed(lambda: replace_partition(conn, "raw.dcgm_samples", frame, partition))
        out["after_write_mib"] = mib(*files)
        out["rerun_s"], out["after_rerun_mib"] = [], []
        for _ in range(reruns):
            seconds, _ = timed(lambda: replace_partition(conn, "raw.dcgm_samples", frame, partition))
            out["rerun_s"].append(seconds)
            out["after_rerun_mib"].append(mib(*files))
        conn.execute("CHECKPOINT")
        out["after_checkpoint_mib"] = mib(*files)
        second_day = partial(
            replace_partition,
            conn,
            "raw.dcgm_samples",
            next_day(frame),
            {"cluster": CLUSTER, "day": DAY + timedelta(days=1)},
        )
        out["second_day_s"], _ = timed(second_day)
        conn.execute("CHECKPOINT")
        out["after_second_day_mib"] = mib(*files)
        del second_day
    return out


def _same(left: pl.DataFrame, right: pl.DataFrame) -> bool:
    try:
        assert_frame_equal(left, right, check_exact=False)
        return True
    except AssertionError:
        return False


def write_parquet_partition(frame: pl.DataFrame, root: Path, cluster: str, day: date) -> Path:
    """Write one partition's file next to its name and rename it over the old one (atomic)."""
    path = root / f"cluster={cluster}" / f"day={day.isoformat()}" / "part-0.parquet"
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    table = frame.drop("cluster", "day").to_arrow(compat_level=pl.CompatLevel.newest())
    pq.write_table(
        table,
        partial,
        row_group_size=ROW_GROUP_ROWS,
        compression=COMPRESSION,
        compression_level=COMPRESSION_LEVEL,
        column_encoding=COLUMN_ENCODING,
        use_dictionary=[c for c in table.column_names if c not in COLUMN_ENCODING],
    )
    partial.replace(path)
    return path


def bench_parquet(frame: pl.DataFrame, root: Path, reruns: int) -> dict:
    store = root / "parquet"
    out: dict = {}
    out["write_s"], path = timed(lambda: write_parquet_partition(frame, store, CLUSTER, DAY))
    out["after_write_mib"] = mib(path)
    out["rerun_s"] = [timed(lambda: write_parquet_partition(frame, store, CLUSTER, DAY))[0] for _ in range(reruns)]
    out["after_rerun_mib"] = mib(path)
    return out


def bench_rollups(root: Path, step: int, rounds: int) -> dict:
    """The minute and hour rollups of the day, from the DuckDB table and from the Parquet files."""
    files = str(root / "parquet" / "**" / "*.parquet")
    text, params = stg_dcgm__gpu_minutely_sql(CLUSTER, DAY, step)
    if text.count(ROLLUP_SQL_TABLE) != 1:
        raise RuntimeError("the minute rollup SQL no longer reads raw.dcgm_samples once")
    parquet_text = text.replace(ROLLUP_SQL_TABLE, "FROM read_parquet(?, hive_partitioning = true)")
    parquet_params = [*params[:2], files, *params[2:]]
    minute_columns = f"SELECT {', '.join(MINUTE_COLUMNS)} FROM raw.dcgm_samples WHERE cluster = ? AND day = ?"
    every_column = "SELECT * FROM raw.dcgm_samples WHERE cluster = ? AND day = ?"
    scan = pl.scan_parquet(files, hive_partitioning=True).filter(
        (pl.col("cluster") == CLUSTER) & (pl.col("day") == DAY)
    )
    with connect(root / "bench.duckdb") as conn:
        key = [CLUSTER, DAY]
        contenders: dict[str, Callable[[], object]] = {
            "table: minutely SQL in DuckDB": lambda: read_frame(conn, text, params),
            "table: minutely polars (read 16 columns + transform)": lambda: stg_dcgm__gpu_minutely(
                read_frame(conn, minute_columns, key).lazy(), step
            ).collect(),
            "table: read the 16 minute columns into polars": lambda: read_frame(conn, minute_columns, key),
            "table: hourly polars (read all columns + transform)": lambda: stg_dcgm__gpu_hourly(
                read_frame(conn, every_column, key).lazy(), step
            ).collect(),
            "parquet: minutely SQL via DuckDB read_parquet": lambda: read_frame(conn, parquet_text, parquet_params),
            "parquet: minutely polars via scan_parquet": lambda: stg_dcgm__gpu_minutely(scan, step).collect(),
            "parquet: hourly polars via scan_parquet": lambda: stg_dcgm__gpu_hourly(scan, step).collect(),
        }
        out: dict = race(contenders, rounds)
        sql = read_frame(conn, text, params)
        out["minutely rows"] = sql.height
        out["minutely SQL rerun identical"] = sql.equals(read_frame(conn, text, params))
        polars_minutely = stg_dcgm__gpu_minutely(read_frame(conn, minute_columns, key).lazy(), step).collect()
        out["minutely SQL == polars"] = _same(sql, polars_minutely)
        out["minutely parquet SQL == table SQL"] = _same(sql, read_frame(conn, parquet_text, parquet_params))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gpus", type=int, default=1000)
    parser.add_argument("--step", type=int, default=15)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--reruns", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    parser.add_argument("--keep", type=Path, help="work here and keep the files (default: a temp dir)")
    args = parser.parse_args()
    root = args.keep or Path(tempfile.mkdtemp(prefix="raw_storage_"))
    root.mkdir(parents=True, exist_ok=True)
    try:
        gen_s, frame = timed(lambda: simulate(args.gpus, args.step, args.seed))
        print(
            f"{frame.height:,} rows ({args.gpus} GPUs x 1 day at {args.step} s), generated in {gen_s} s, "
            f"{frame.estimated_size() / 2**20:,.0f} MiB in memory"
        )
        rows = frame.height
        duck = bench_duckdb(frame, root, args.reruns)
        parquet = bench_parquet(frame, root, args.reruns)
        del frame
        rollups = bench_rollups(root, args.step, args.rounds)
        for name, result in (("duckdb table", duck), ("hive parquet", parquet), ("rollups", rollups)):
            print(f"\n{name}")
            for key, value in result.items():
                print(f"  {key:56} {value}")
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"\npeak RSS {peak:,.0f} MiB")
        print(json.dumps({"rows": rows, "duckdb": duck, "parquet": parquet, "rollups": rollups}))
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
