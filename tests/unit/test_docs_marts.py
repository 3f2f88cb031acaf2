"""docs/marts.md is the one place the public tables are documented: it must match the code."""

import re
from pathlib import Path

import pytest

from contracts.slurm_nodes import SLURM_NODE_SCHEMA
from transforms.intermediate import int_gpu_inventory_observed
from transforms.marts import (
    fct_gpu_capacity_split,
    fct_gpu_hourly,
    fct_job_usage,
    mart_cluster_monthly,
    mart_department_monthly,
    mart_deployment_monthly,
    mart_kube_queue_monthly,
)
from transforms.staging import (
    stg_dcgm__gpu_dropout,
    stg_dcgm__gpu_xid,
    stg_kube__node_capacity,
    stg_kube__node_downtime,
    stg_slurm__node_capacity,
)

DOC = Path(__file__).parents[2] / "docs" / "marts.md"
MARTS = {
    "marts.fct_job_usage": fct_job_usage.SCHEMA,
    "marts.fct_gpu_hourly": fct_gpu_hourly.SCHEMA,
    "marts.fct_gpu_capacity_split": fct_gpu_capacity_split.SCHEMA,
    "marts.mart_department_monthly": mart_department_monthly.SCHEMA,
    "marts.mart_cluster_monthly": mart_cluster_monthly.SCHEMA,
    "marts.mart_deployment_monthly": mart_deployment_monthly.SCHEMA,
    "marts.mart_kube_queue_monthly": mart_kube_queue_monthly.SCHEMA,
    "intermediate.int_gpu_inventory_observed": int_gpu_inventory_observed.SCHEMA,
    "staging.stg_kube__node_capacity": stg_kube__node_capacity.SCHEMA,
    "staging.stg_kube__node_downtime": stg_kube__node_downtime.SCHEMA,
    "staging.stg_dcgm__gpu_dropout": stg_dcgm__gpu_dropout.SCHEMA,
    "staging.stg_dcgm__gpu_xid": stg_dcgm__gpu_xid.SCHEMA,
    "staging.stg_slurm__node_capacity": stg_slurm__node_capacity.SCHEMA,
    "raw.slurm_node_snapshots": SLURM_NODE_SCHEMA,
}


def _documented_columns(table: str) -> list[str]:
    text = DOC.read_text()
    section = text.split(f"## {table}\n", 1)[1].split("\n## ", 1)[0]
    return [c for c in re.findall(r"^\| ([a-z_0-9]+) \|", section, flags=re.MULTILINE) if c != "column"]


@pytest.mark.parametrize("table", sorted(MARTS))
def test_doc_lists_exactly_the_columns_in_order(table: str) -> None:
    assert _documented_columns(table) == list(MARTS[table])


def test_doc_lists_the_landings_columns_sources_statuses_and_gap_causes() -> None:
    from contracts.sources import GAP_CAUSES, SOURCES
    from warehouse.landings import FAILED, GAP, LANDING_SCHEMA, OK, REJECTED

    section = DOC.read_text().split("## meta.landings\n", 1)[1].split("\n## ", 1)[0]
    columns = section.split("| column | type | meaning |", 1)[1].split("\n\n", 1)[0]
    assert re.findall(r"^\| ([a-z_0-9]+) \|", columns, flags=re.MULTILINE) == list(LANDING_SCHEMA)
    for source in SOURCES:
        assert f"| `{source}` |" in section
    for status in (OK, GAP, REJECTED, FAILED):
        assert f"`{status}`" in section
    for cause, shown in GAP_CAUSES.items():
        assert f"| `{cause}` | {shown} |" in section
