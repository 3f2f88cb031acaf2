"""cardhours' capacity split of the downtime scenario, from what Slurm recorded, for the
comparison with sreport (tests/integration/test_slurm_sreport.py).

Slurm's records go through cardhours' own readers and transforms: ``sacct`` output through the
sacct reader and ``stg_slurm__jobs``; ``sacctmgr show event`` / ``show reservation`` rows through
``stg_slurm__downtime``; the runs' held GPUs through ``capacity_placement.host_runs``; and the
hours through ``fct_gpu_capacity_split``. The one thing the test cluster cannot give is
``fct_gpu_hourly``'s allocation, which a site gets from DCGM samples attributed to the runs: its
stand-in GPUs have no DCGM. Here each GPU-hour of the node has 3600 s of capacity and an equal
share of the GPU-seconds the runs held on the node in that hour (allocation wins over every
state, so which of the node's GPUs held it does not change the node's totals).
"""

from __future__ import annotations

from datetime import datetime, timedelta

import polars as pl

from contracts.capacity_states import STATES
from contracts.gpus import GPU_INSTANCE
from sources.sacct import parse_sacct_text
from sources.slurm_downtime import EVENTS, RESERVATIONS, parse_records
from tests.slurm_harness.config import GPU_TYPE, GPUS, NODE
from transforms.marts.capacity_placement import host_runs
from transforms.marts.fct_gpu_capacity_split import STATE_COLUMNS, fct_gpu_capacity_split
from transforms.marts.fct_gpu_hourly import SCHEMA as HOURLY_SCHEMA
from transforms.staging.stg_slurm__downtime import stg_slurm__downtime
from transforms.staging.stg_slurm__jobs import stg_slurm__jobs

CLUSTER = "slurm-test"  # cardhours' name for the test cluster


def sacctmgr_rows(events: str, reservations: str, *, has_header: bool) -> tuple[pl.DataFrame, pl.DataFrame, int]:
    """(event rows, reservation rows, lines quarantined) as cardhours reads sacctmgr output:
    saved files with their header (file mode) or ``--noheader`` output of cardhours' own
    ``format=`` lists (command mode)."""
    rows, bad = [], 0
    for text, record in ((events, EVENTS), (reservations, RESERVATIONS)):
        got, rejected = parse_records(
            text, record, source=f"sacctmgr show {record.entity}", cluster=CLUSTER, day_key="", has_header=has_header
        )
        rows.append(got)
        bad += rejected.height
    return rows[0], rows[1], bad


def _jobs(sacct: str, start: datetime, end: datetime) -> pl.DataFrame:
    raw, rejects = parse_sacct_text(sacct, source="sacct.txt", cluster=CLUSTER, day=start.date(), has_header=True)
    assert rejects.is_empty(), rejects
    jobs, quarantined = stg_slurm__jobs(raw, start, end)
    assert quarantined.is_empty(), quarantined
    return jobs


def _hourly(held: pl.DataFrame, start: datetime, end: datetime) -> pl.DataFrame:
    """The node's GPU-hours: 3600 s of capacity each, the held GPU-seconds of the hour shared equally."""
    hours = [start + timedelta(hours=h) for h in range(int((end - start).total_seconds()) // 3600)]
    rows = []
    for hour in hours:
        later = hour + timedelta(hours=1)
        seconds = held.select(
            (
                (pl.min_horizontal("run_end", pl.lit(later)) - pl.max_horizontal("run_start", pl.lit(hour)))
                .dt.total_microseconds()
                .clip(lower_bound=0)
                / 1e6
                * pl.col("host_gpus")
            ).sum()
        ).item()
        rows += [
            dict.fromkeys(GPU_INSTANCE)
            | {"cluster": CLUSTER, "hostname": NODE, "gpu": gpu, "gpu_model": GPU_TYPE.upper(), "hour": hour}
            | {"capacity_seconds": 3600.0, "allocated_seconds": (seconds or 0.0) / GPUS}
            for gpu in range(GPUS)
        ]
    columns = [c for c in HOURLY_SCHEMA if c in rows[0]]
    return pl.DataFrame(rows, schema={c: HOURLY_SCHEMA[c] for c in columns})


def cardhours_split(
    sacct: str, events: pl.DataFrame, reservations: pl.DataFrame, slurm_cluster: str, start: datetime, end: datetime
) -> tuple[dict[str, float], pl.DataFrame, pl.DataFrame]:
    """(GPU-seconds per capacity state over [start, end), the jobs, the downtime intervals)."""
    jobs = _jobs(sacct, start, end)
    intervals, bad = stg_slurm__downtime(
        events, reservations, cluster=CLUSTER, slurm_cluster=slurm_cluster, window=(start, end), as_of=end
    )
    assert all("names no node" in reason for reason in bad["reason"]), bad  # only the cluster's own event
    held = host_runs(jobs, None, start, end)
    split = fct_gpu_capacity_split(_hourly(held, start, end), intervals, start, end, held)
    return {state: split[STATE_COLUMNS[state]].sum() for state in STATES}, jobs, intervals
