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

STATE_FILE, TRUTH_FILE = "kube_state.om", "truth_pods.parquet"


def start(
    enabled: bool, cluster: str, first: date, days: int, step_seconds: int, seed: int, org: Org
) -> KubeSimulation | None:
    return KubeSimulation(cluster, first, days, step_seconds, seed, org) if enabled else None


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


def finish(pool: KubeSimulation | None, out_dir: Path, config_path: Path) -> dict[str, Path]:
    """Write the pool's files and its config section; the SimulationResult fields set."""
    if pool is None:
        return {}
    state, truth = Path(out_dir) / STATE_FILE, Path(out_dir) / TRUTH_FILE
    pool.write(state, truth)
    with Path(config_path).open("a", encoding="utf-8") as out:
        out.write("\n" + "\n".join(pool.config_lines()))
    return {"kube_state_path": state, "truth_pods_path": truth}
