"""The chargeback's public columns are documented where docs/marts.md and docs/chargeback.md say."""

import re
from pathlib import Path

import pytest

from transforms.marts import fct_chargeback_focus, fct_chargeback_jobs, mart_chargeback_reconciliation

DOCS = Path(__file__).parents[2] / "docs"


def _table_columns(text: str, heading: str) -> list[str]:
    section = text.split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0]
    return [c for c in re.findall(r"^\| ([A-Za-z_0-9]+) \|", section, flags=re.MULTILINE) if c not in ("column", "key")]


@pytest.mark.parametrize(
    ("table", "schema"),
    [
        ("marts.fct_chargeback_jobs", fct_chargeback_jobs.SCHEMA),
        ("marts.mart_chargeback_reconciliation", mart_chargeback_reconciliation.SCHEMA),
    ],
)
def test_marts_doc_lists_exactly_the_columns_in_order(table: str, schema: dict) -> None:
    assert _table_columns((DOCS / "marts.md").read_text(), table) == list(schema)


def test_chargeback_doc_lists_the_export_columns_in_order() -> None:
    documented = _table_columns(
        (DOCS / "chargeback.md").read_text(), "The FOCUS file: `YYYY-MM/chargeback_focus.csv` and `.parquet`"
    )
    assert documented == [*fct_chargeback_focus.FOCUS_COLUMNS, *fct_chargeback_focus.X_COLUMNS]
