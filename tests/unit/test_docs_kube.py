"""docs/marts.md documents the Kubernetes staging tables column for column."""

import re
from pathlib import Path

import pytest

from transforms.staging import stg_kube__jobs, stg_kube__pods

DOC = Path(__file__).parents[2] / "docs" / "marts.md"
TABLES = {"staging.stg_kube__pods": stg_kube__pods.SCHEMA, "staging.stg_kube__jobs": stg_kube__jobs.SCHEMA}


@pytest.mark.parametrize("table", sorted(TABLES))
def test_doc_lists_exactly_the_columns_in_order(table: str) -> None:
    section = DOC.read_text().split(f"## {table}\n", 1)[1].split("\n## ", 1)[0]
    columns = [c for c in re.findall(r"^\| ([a-z_0-9]+) \|", section, flags=re.MULTILINE) if c != "column"]
    assert columns == list(TABLES[table])
