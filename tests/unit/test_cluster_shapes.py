"""Clusters of any shape: the sources a cluster lands follow from its config sections, declared
once (``ClusterConfig.sources``), and a day a source answered with nothing (a 'gap') is landed:
the gate, ``cardhours run`` and the freshness alert count it, the review and close list it."""

from __future__ import annotations

import tomllib
from datetime import date, datetime, timedelta
from pathlib import Path

import duckdb
import polars as pl
import pytest

from config import ConfigError, parse_config
from contracts.sources import (
    BEFORE_FIRST_SAMPLE,
    DCGM,
    GAP_CAUSES,
    KUBE,
    NO_JOBS,
    NO_SERIES,
    SACCT,
    SLURM_DOWNTIME,
    SLURM_NODES,
    SOURCES,
)
from warehouse.books.landings import coverage_gap_lines, coverage_gaps, landed_days, landing_gaps, stale_sources
from warehouse.lake import refresh
from warehouse.landings import FAILED, GAP, LANDING_SCHEMA, LANDINGS, OK, Landing, newest_landings, write_landing

NODES = """
[[clusters.inventory.node_groups]]
hosts = "{name}-[1-2]"
gpu_model = "H100"
model_name = "NVIDIA H100 80GB HBM3"
gpus_per_node = 8
gpu_memory_mib = 81559
"""
PROMETHEUS = '[clusters.prometheus]\nurl = "http://prometheus:9090"\n'
SECTIONS = {
    "both": '[clusters.slurm]\nsacct_file = "sacct.txt"\nsacctmgr_command = "sacctmgr"\n'
    'scontrol_command = "scontrol"\n\n'
    f"{PROMETHEUS}\n[clusters.kubernetes]\n",
    "slurm": '[clusters.slurm]\nsacct_file = "sacct.txt"\n',
    "k8s": f"{PROMETHEUS}\n[clusters.kubernetes]\n",
    "plain": "",
}


SLURM_ONLY = '[clusters.slurm]\nsacct_file = "sacct.txt"\n\n'  # the "slurm" cluster's section, as _site writes it


def _site() -> str:
    clusters = "".join(
        f'[[clusters]]\nname = "{name}"\n\n[clusters.metrics]\nsource = "file"\npath = "m"\n\n{sections}\n'
        + NODES.format(name=name)
        for name, sections in SECTIONS.items()
    )
    rates = '[rates]\ncurrency = "EUR"\n\n[rates.gpu_hour]\nH100 = 2.5\n'
    return f'[warehouse]\npath = "w.duckdb"\n\n[reports]\ndir = "r"\n\n{clusters}\n{rates}'


def test_each_cluster_lands_the_sources_its_sections_name() -> None:
    config = parse_config(tomllib.loads(_site()))
    assert config.expected_sources() == {
        "both": [DCGM, SACCT, KUBE, SLURM_DOWNTIME, SLURM_NODES],
        "slurm": [DCGM, SACCT],
        "k8s": [DCGM, KUBE],
        "plain": [DCGM],
    }
    assert [c.name for c in config.clusters_with(SACCT)] == ["both", "slurm"]
    assert [c.name for c in config.clusters_with(KUBE)] == ["both", "k8s"]
    assert [c.name for c in config.clusters_with(DCGM)] == ["both", "slurm", "k8s", "plain"]
    assert config.charged_clusters == ["both", "slurm", "k8s"]  # a metrics-only cluster is not billed
    assert [c.name for c in config.clusters_with(SLURM_DOWNTIME)] == ["both"]
    assert [c.name for c in config.clusters_with(SLURM_NODES)] == ["both"]
    assert set(SOURCES) == {DCGM, SACCT, KUBE, SLURM_DOWNTIME, SLURM_NODES} and set(GAP_CAUSES) == {
        NO_SERIES,
        NO_JOBS,
        BEFORE_FIRST_SAMPLE,
    }


def _landings(rows: list[tuple[str, str, date, str, str | None]]) -> pl.DataFrame:
    at = datetime(2026, 3, 1)
    return pl.DataFrame(
        [
            {"cluster": c, "day": d, "source": s, "landed_at": at, "status": status, "rows": 0, "detail": detail}
            for c, s, d, status, detail in rows
        ],
        schema=LANDING_SCHEMA,
    )


def test_a_gap_is_a_landed_day_and_its_runs_are_listed_with_their_causes() -> None:
    days = [date(2026, 2, 1) + timedelta(days=i) for i in range(5)]
    rows = [("k8s", DCGM, day, GAP, BEFORE_FIRST_SAMPLE) for day in days[:2]]
    rows += [("k8s", DCGM, days[2], OK, None), ("k8s", DCGM, days[3], GAP, NO_SERIES), ("k8s", DCGM, days[4], OK, None)]
    rows += [("k8s", KUBE, day, GAP if day.day % 2 else OK, NO_SERIES) for day in days[:4]]
    rows += [("k8s", KUBE, days[4], FAILED, "ConnectError: refused")]
    landings = _landings(rows)
    expected = {"k8s": [DCGM, KUBE]}
    assert landing_gaps(landings, expected, days[0], days[4] + timedelta(days=1)) == [
        "cluster 'k8s' kube: 2026-02-05 failed (ConnectError: refused)"
    ]
    assert landed_days(landings, expected, days[0], days[4] + timedelta(days=1)) == days[:4]
    gaps = coverage_gaps(landings)
    assert gaps.rows() == [
        ("k8s", DCGM, days[0], days[1], 2, BEFORE_FIRST_SAMPLE),
        ("k8s", DCGM, days[3], days[3], 1, NO_SERIES),
        ("k8s", KUBE, days[0], days[0], 1, NO_SERIES),
        ("k8s", KUBE, days[2], days[2], 1, NO_SERIES),
    ]
    assert coverage_gap_lines(gaps) == [
        "cluster 'k8s' dcgm: 2026-02-01..2026-02-02 (2 days) no series, before the first ever landed; "
        "2026-02-04 no series",
        "cluster 'k8s' kube: 2026-02-01 no series; 2026-02-03 no series",
    ]


def test_a_gap_counts_for_freshness_a_failure_does_not(tmp_path: Path) -> None:
    at = datetime(2026, 3, 2)
    conn = duckdb.connect()
    for source, status in ((DCGM, GAP), (KUBE, FAILED)):
        write_landing(conn, tmp_path, Landing("k8s", date(2026, 3, 1), source, at, status, 0, 0, 0, NO_SERIES))
    refresh(conn, tmp_path, LANDINGS)
    stale = stale_sources(newest_landings(conn), {"k8s": [DCGM, KUBE]}, datetime(2026, 3, 1))
    assert [(s.cluster, s.source, s.newest) for s in stale] == [("k8s", KUBE, None)]


@pytest.mark.parametrize(
    ("slurm", "key", "message"),
    [
        ('scontrol_command = "scontrol"\nnodes_file = "n.txt"', "nodes_file", "not both"),
        ("nodes_read_at = 2026-12-01T00:00:00", "nodes_read_at", "only with nodes_file"),
        ('nodes_file = "n.txt"\nnodes_read_at = 2026-12-01T00:00:00+02:00', "nodes_read_at", "without an offset"),
    ],
)
def test_node_records_keys_are_checked_naming_the_key(slurm: str, key: str, message: str) -> None:
    text = _site().replace(SLURM_ONLY, SLURM_ONLY.replace("\n\n", f"\n{slurm}\n\n"), 1)
    with pytest.raises(ConfigError) as raised:
        parse_config(tomllib.loads(text))
    assert f"slurm.{key}" in str(raised.value) and message in str(raised.value)


def test_a_saved_node_file_is_read_at_its_configured_time() -> None:
    keys = 'nodes_file = "n.txt"\nnodes_read_at = 2026-12-01T06:00:00\n'
    text = _site().replace(SLURM_ONLY, SLURM_ONLY.replace("\n\n", f"\n{keys}\n"), 1)
    slurm = parse_config(tomllib.loads(text)).clusters[1].slurm
    assert slurm.reads_nodes and slurm.nodes_read_at == datetime(2026, 12, 1, 6)
    assert parse_config(tomllib.loads(text)).expected_sources()["slurm"] == [DCGM, SACCT, SLURM_NODES]
