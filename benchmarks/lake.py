"""The hot paths of the daily tables on the lake against the DuckDB tables they replaced.

    .venv/bin/python benchmarks/lake.py                      # 1000 GPUs x 1 day at 15 s, a month of minutes
    .venv/bin/python benchmarks/lake.py --gpus 250 --days 7

Three paths, each through the code the pipeline runs:

1. ingest write of one day of raw samples: ``warehouse.replace_partition`` into ``raw.dcgm_samples``
   of a DuckDB file, against ``warehouse.lake.write_partition`` (cast to the table's types, a
   temporary file, fsync, rename);
2. the minute rollup (``stg_dcgm__gpu_minutely_sql``) over that day: on the DuckDB file, against
   an in-memory DuckDB whose ``raw.dcgm_samples`` is the lake's view (``pipelines.store.open_lake``);
3. reading a month of minute rows back for attribution (the ``MINUTE_COLUMNS`` of
   ``staging.stg_dcgm__gpu_minutely`` of one cluster and month, as Arrow): the day's rollup written
   ``--days`` times (shifted a day each) into each store, then read back from the DuckDB table,
   and from the lake view through the DuckDB file (what the monthly job does).

Rounds run interleaved (median and best reported). Results: benchmarks/README.md. The last line is JSON.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from datetime import timedelta
from pathlib import Path

import polars as pl
from raw_storage import CLUSTER, DAY, mib, race, simulate, timed

from pipelines.tables import RAW_DCGM_SAMPLES, STG_DCGM__GPU_MINUTELY
from transforms.intermediate.int_gpu_minutes_attributed import MINUTE_COLUMNS
from transforms.staging.stg_dcgm__gpu_minutely import stg_dcgm__gpu_minutely_sql
from warehouse import connect, replace_partition
from warehouse.connection import MEMORY
from warehouse.lake import attach, view_select, write_partition

STEP = 15


def bench_write(frame: pl.DataFrame, root: Path, rounds: int) -> dict:
    partition = {"cluster": CLUSTER, "day": DAY}
    with connect(root / "wh.duckdb") as conn, connect(MEMORY) as mem:
        lake = root / "lake"
        out = race(
            {
                "duckdb_table": lambda: replace_partition(conn, RAW_DCGM_SAMPLES.name, frame, partition),
                "lake_file": lambda: write_partition(mem, lake, RAW_DCGM_SAMPLES.lake_table, frame, partition),
            },
            rounds,
        )
        conn.execute("CHECKPOINT")
    out["day_mib"] = {"duckdb_file": mib(root / "wh.duckdb"), "lake_file": mib(*lake.rglob("*.parquet"))}
    return out


def bench_rollup(root: Path, rounds: int) -> tuple[dict, pl.DataFrame]:
    text, params = stg_dcgm__gpu_minutely_sql(CLUSTER, DAY, STEP)
    with connect(root / "wh.duckdb") as conn, connect(MEMORY) as mem:
        attach(mem, root / "lake", [RAW_DCGM_SAMPLES.lake_table])
        out = race(
            {
                "duckdb_table": lambda: conn.sql(text, params=params).to_arrow_table(),
                "lake_view": lambda: mem.sql(text, params=params).to_arrow_table(),
            },
            rounds,
        )
        minutes = conn.sql(text, params=params).pl()
        assert minutes.sort(minutes.columns).equals(mem.sql(text, params=params).pl().sort(minutes.columns))
    return out, minutes


def bench_month_read(minutes: pl.DataFrame, root: Path, days: int, rounds: int) -> dict:
    table = STG_DCGM__GPU_MINUTELY
    out: dict = {"rows": minutes.height * days}
    with connect(root / "wh.duckdb") as conn, connect(MEMORY) as mem:
        lake = root / "lake"
        writes = {"duckdb_table": 0.0, "lake_file": 0.0}
        for offset in range(days):
            day = DAY + timedelta(days=offset)
            frame = minutes.with_columns(pl.col("minute") + timedelta(days=offset), pl.lit(day).alias("day"))
            partition = {"cluster": CLUSTER, "day": day}
            writes["duckdb_table"] += timed(lambda f=frame, p=partition: replace_partition(conn, table.name, f, p))[0]

            def lake_write(f=frame, p=partition):
                return write_partition(mem, lake, table.lake_table, f, p)

            writes["lake_file"] += timed(lake_write)[0]
        out["write_month_s"] = {name: round(seconds, 2) for name, seconds in writes.items()}
        conn.execute("CHECKPOINT")
        where = "WHERE cluster = ? AND day >= ? AND day < ?"
        sql = f"SELECT {', '.join(MINUTE_COLUMNS)} FROM {{}} {where}"
        params = [CLUSTER, DAY, DAY + timedelta(days=days)]
        conn.execute("CREATE SCHEMA IF NOT EXISTS lake")
        view = "lake.stg_dcgm__gpu_minutely"  # the view the monthly job reads, beside the table
        conn.execute(f"CREATE OR REPLACE VIEW {view} AS {view_select(lake, table.lake_table)}")
        out |= race(
            {
                "duckdb_table": lambda: conn.sql(sql.format(table.name), params=params).to_arrow_table(),
                "lake_view": lambda: conn.sql(sql.format(view), params=params).to_arrow_table(),
            },
            rounds,
        )
        hourly = f"SELECT hostname, gpu, date_trunc('hour', minute), avg(coverage) FROM {{}} {where} GROUP BY ALL"
        out["hourly_aggregate"] = race(
            {
                "duckdb_table": lambda: conn.sql(hourly.format(table.name), params=params).fetchall(),
                "lake_view": lambda: conn.sql(hourly.format(view), params=params).fetchall(),
            },
            rounds,
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gpus", type=int, default=1000)
    parser.add_argument("--days", type=int, default=30, help="days of minute rows read back as a month")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="cardhours-lake-bench-") as folder:
        root = Path(folder)
        frame = simulate(args.gpus, STEP, args.seed)
        result: dict = {"gpus": args.gpus, "raw_rows": frame.height}
        result["ingest_write"] = bench_write(frame, root, args.rounds)
        del frame
        result["minute_rollup"], minutes = bench_rollup(root, args.rounds)
        result["month_read"] = bench_month_read(minutes, root, args.days, args.rounds)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
