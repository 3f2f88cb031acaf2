"""``sacct --parsable2 --duplicates`` text for the simulated runs: allocation rows plus
``.batch``/``.extern`` (and for some multi-node jobs ``.0``) step rows, as of the window end."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import polars as pl

from contracts import hostlist
from contracts.schemas import SACCT_FIELDS
from simulate.scheduler import Run

MEM_GB_PER_CPU = 8
# Step states and exit codes by the allocation's state: (.batch, .extern, .0).
STEP_STATES = {
    "COMPLETED": ("COMPLETED", "COMPLETED", "COMPLETED"),
    "FAILED": ("FAILED", "COMPLETED", "FAILED"),
    "TIMEOUT": ("CANCELLED", "COMPLETED", "CANCELLED"),
    "CANCELLED": ("CANCELLED", "COMPLETED", "CANCELLED"),
    "REQUEUED": ("NODE_FAIL", "CANCELLED", "NODE_FAIL"),
    "RUNNING": ("RUNNING", "RUNNING", "RUNNING"),
}


def slurm_time(value: datetime | None) -> str:
    """``2026-10-01T13:05:00``, or ``Unknown``."""
    return "Unknown" if value is None else value.strftime("%Y-%m-%dT%H:%M:%S")


def slurm_duration(seconds: int) -> str:
    """``04:00:00`` or ``1-12:00:00``."""
    days, rest = divmod(seconds, 86400)
    clock = f"{rest // 3600:02d}:{rest % 3600 // 60:02d}:{rest % 60:02d}"
    return f"{days}-{clock}" if days else clock


def _mem(cpus: int) -> str:
    gb = cpus * MEM_GB_PER_CPU
    return f"{gb // 1024}T" if gb >= 1024 and gb % 1024 == 0 else f"{gb}G"


def _gres_type(run: Run, models: dict[str, str]) -> str:
    profile = run.job.request.mig_profile
    if profile is not None:
        return profile
    if run.instances:
        return models[run.instances[0][0]].lower()
    return run.job.request.models[0].lower()


def _tres(cpus: int, gpus: int, gpu_type: str | None, nodes: int) -> str:
    typed = f"gres/gpu:{gpu_type}={gpus}," if gpu_type else ""
    return f"billing={cpus},cpu={cpus},{typed}gres/gpu={gpus},mem={_mem(cpus)},node={nodes}"


def _state(run: Run) -> str:
    """``CANCELLED by <uid>`` for cancels, else the state."""
    if run.state == "CANCELLED" and run.cancelled_by is not None:
        return f"{run.state} by {run.cancelled_by}"
    return run.state


def _elapsed(start: datetime | None, end: datetime | None) -> int:
    return 0 if start is None or end is None else int((end - start).total_seconds())


def _allocation_row(run: Run, models: dict[str, str], cluster: str) -> dict[str, str]:
    job, started = run.job, run.start is not None
    gpu_type = _gres_type(run, models)
    n_nodes = len(run.hosts) if started else job.request.nodes
    alloc = _tres(job.cpus_per_slot * len(run.instances), len(run.instances), gpu_type, n_nodes) if started else ""
    req_type = gpu_type if job.typed else None
    return {
        "JobID": run.job_id,
        "JobIDRaw": run.job_id_raw,
        "JobName": job.name,
        "User": job.user.name,
        "Account": job.account,
        "Partition": job.partition,
        "QOS": job.qos,
        "State": _state(run),
        "ExitCode": run.exit_code,
        "Submit": slurm_time(run.submit),
        "Eligible": slurm_time(run.eligible),
        "Start": slurm_time(run.start),
        "End": slurm_time(run.end),
        "ElapsedRaw": str(_elapsed(run.start, run.alloc_end)),
        "Timelimit": slurm_duration(job.timelimit),
        "NNodes": str(n_nodes),
        "NodeList": hostlist.compress(run.hosts) if started else "None assigned",
        "AllocTRES": alloc,
        "ReqTRES": _tres(job.cpus_per_slot * job.slots, job.slots, req_type, job.request.nodes),
        "Cluster": cluster,
    }


def _step_rows(run: Run, alloc: dict[str, str]) -> list[dict[str, str]]:
    """.batch on the first node (with its GPUs), .extern on all nodes, maybe .0 on all nodes."""
    assert run.start is not None
    hosts, cpus = run.hosts, run.job.cpus_per_slot
    first_slots = sum(1 for host, _, _ in run.instances if host == hosts[0])
    batch, extern, srun = STEP_STATES[run.state]
    code = "0:15" if run.state in ("TIMEOUT", "CANCELLED") else run.exit_code

    def step(
        suffix: str,
        name: str,
        state: str,
        exit_code: str,
        tres: str,
        nodes: list[str],
        start: datetime,
        end: datetime | None,
    ) -> dict[str, str]:
        return alloc | {
            "JobID": f"{run.job_id}.{suffix}",
            "JobIDRaw": f"{run.job_id_raw}.{suffix}",
            "JobName": name,
            "User": "",
            "Partition": "",
            "QOS": "",
            "State": state,
            "ExitCode": exit_code,
            "Submit": slurm_time(start),
            "Eligible": slurm_time(start),
            "Start": slurm_time(start),
            "End": slurm_time(end),
            "ElapsedRaw": str(_elapsed(start, end or run.as_of)),
            "Timelimit": "",
            "NNodes": str(len(nodes)),
            "NodeList": hostlist.compress(nodes),
            "AllocTRES": tres,
            "ReqTRES": "",
        }

    total = cpus * len(run.instances)
    rows = [
        step(
            "batch",
            "batch",
            batch,
            code if batch != "COMPLETED" else "0:0",
            f"cpu={cpus * first_slots},gres/gpu={first_slots},mem={_mem(cpus * first_slots)},node=1",
            hosts[:1],
            run.start,
            run.end,
        ),
        step(
            "extern",
            "extern",
            extern,
            "0:0",
            f"cpu={total},mem={_mem(total)},node={len(hosts)}",
            hosts,
            run.start,
            run.end,
        ),
    ]
    window = (run.alloc_end or run.as_of) - run.start
    if run.job.srun_step and window > timedelta(seconds=60):
        srun_end = None if run.end is None else run.end - timedelta(seconds=10)
        rows.append(
            step(
                "0",
                "python",
                srun,
                code if srun != "COMPLETED" else "0:0",
                f"cpu={total},mem={_mem(total)},node={len(hosts)}",
                hosts,
                run.start + timedelta(seconds=15),
                srun_end,
            )
        )
    return rows


def sacct_rows(runs: list[Run], inventory: pl.DataFrame, cluster: str) -> list[dict[str, str]]:
    """Every sacct line (as field -> text), in run order, steps after their allocation."""
    models = dict(inventory.select("hostname", "gpu_model").unique().iter_rows())
    rows: list[dict[str, str]] = []
    for run in runs:
        alloc = _allocation_row(run, models, cluster)
        rows.append(alloc)
        if run.start is not None:
            rows.extend(_step_rows(run, alloc))
    return rows


def write_sacct(path: Path, runs: list[Run], inventory: pl.DataFrame, cluster: str) -> int:
    """Write ``sacct --parsable2`` output with its header line; returns the number of rows."""
    rows = sacct_rows(runs, inventory, cluster)
    fields = list(SACCT_FIELDS)
    with Path(path).open("w", encoding="utf-8", newline="\n") as out:
        out.write("|".join(fields) + "\n")
        for row in rows:
            out.write("|".join(row[f] for f in fields) + "\n")
    return len(rows)
