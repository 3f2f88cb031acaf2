"""docs/marts.md is the one place the public tables are documented: it must match the code."""

import re
from pathlib import Path

import pytest

from transforms.intermediate import int_gpu_inventory_observed
from transforms.marts import (
    fct_gpu_hourly,
    fct_job_usage,
    mart_cluster_monthly,
    mart_department_monthly,
    mart_deployment_monthly,
    mart_kube_queue_monthly,
)

DOC = Path(__file__).parents[2] / "docs" / "marts.md"
MARTS = {
    "marts.fct_job_usage": fct_job_usage.SCHEMA,
    "marts.fct_gpu_hourly": fct_gpu_hourly.SCHEMA,
    "marts.mart_department_monthly": mart_department_monthly.SCHEMA,
    "marts.mart_cluster_monthly": mart_cluster_monthly.SCHEMA,
    "marts.mart_deployment_monthly": mart_deployment_monthly.SCHEMA,
    "marts.mart_kube_queue_monthly": mart_kube_queue_monthly.SCHEMA,
    "intermediate.int_gpu_inventory_observed": int_gpu_inventory_observed.SCHEMA,
}


def _documented_columns(table: str) -> list[str]:
    text = DOC.read_text()
    section = text.split(f"## {table}\n", 1)[1].split("\n## ", 1)[0]
    return [c for c in re.findall(r"^\| ([a-z_0-9]+) \|", section, flags=re.MULTILINE) if c != "column"]


@pytest.mark.parametrize("table", sorted(MARTS))
def test_doc_lists_exactly_the_columns_in_order(table: str) -> None:
    assert _documented_columns(table) == list(MARTS[table])
