"""The few calls ``simulate.run`` makes for the Kubernetes pool; each is a no-op without it
(``pool is None``), so a Slurm-only simulation writes exactly what it wrote before."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import polars as pl

from simulate.cluster import Cluster
from simulate.jobs import Org
from simulate.kube.dcgm import OM_LABELS, OM_SERIES_ORDER
from simulate.kube.pool import kube_nodes
from simulate.kube.run import KubeSimulation
from simulate.om_writer import OpenMetricsWriter

STATE_FILE, STATE_FOLDER, TRUTH_FILE = "kube_state.om", "kube_state", "truth_pods.parquet"


def start(
    enabled: bool,
    cluster: str,
    first: date,
    days: int,
    step_seconds: int,
    seed: int,
    org: Org,
    state_step: int | None = None,
) -> KubeSimulation | None:
    return KubeSimulation(cluster, first, days, step_seconds, seed, org, state_step) if enabled else None


def om_writer(path: Path, pool: KubeSimulation | None) -> OpenMetricsWriter:
    if pool is None:
        return OpenMetricsWriter(path)
    return OpenMetricsWriter(path, labels=OM_LABELS, series_order=OM_SERIES_ORDER)


def add_day(pool: KubeSimulation | None, day: date, frame: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(samples of every node, the frame for the OpenMetrics writer)."""
    return (frame, frame) if pool is None else pool.add_day(day, frame)


def inventory(pool: KubeSimulation | None, slurm: pl.DataFrame) -> pl.DataFrame:
    return slurm if pool is None else pl.concat([slurm, pool.inventory])


def layout(pool: KubeSimulation | None, slurm: Cluster) -> Cluster:
    """The nodes the config lists: the Slurm nodes, then the pool's."""
    return slurm if pool is None else Cluster(slurm.name, slurm.nodes + kube_nodes(len(slurm.nodes)))


def finish(pool: KubeSimulation | None, out_dir: Path, config_path: Path, daily: bool = False) -> dict[str, Path]:
    """Write the pool's files and its config section; the SimulationResult fields set.
    ``daily``: the series as a folder of one OpenMetrics file per day (``kube_state/``)."""
    if pool is None:
        return {}
    name = STATE_FOLDER if daily else STATE_FILE
    state, truth = Path(out_dir) / name, Path(out_dir) / TRUTH_FILE
    pool.write(state, truth, daily)
    with Path(config_path).open("a", encoding="utf-8") as out:
        out.write("\n" + "\n".join(pool.config_lines(name)))
    return {"kube_state_path": state, "truth_pods_path": truth}
