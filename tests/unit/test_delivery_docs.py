"""docs/marts.md documents meta.deliveries with exactly its columns, and docs/reports.md every
[delivery] key."""

import re
from pathlib import Path

from config import DeliveryConfig
from warehouse.deliveries import DELIVERY_SCHEMA

DOCS = Path(__file__).parents[2] / "docs"


def test_marts_doc_lists_the_ledger_columns_in_order() -> None:
    section = (DOCS / "marts.md").read_text().split("## meta.deliveries\n", 1)[1].split("\n## ", 1)[0]
    columns = [c for c in re.findall(r"^\| ([a-z_0-9]+) \|", section, flags=re.MULTILINE) if c != "column"]
    assert columns == list(DELIVERY_SCHEMA)


def test_reports_doc_names_every_delivery_key() -> None:
    section = (DOCS / "reports.md").read_text().split("## Delivery by e-mail\n", 1)[1].split("\n## ", 1)[0]
    for key in DeliveryConfig.model_fields:
        assert f"`{key}`" in section, key
