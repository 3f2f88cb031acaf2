"""A GPU model DCGM reports other than the node group's model_name is listed with its hours, in
Polars and in the warehouse's SQL alike, and the review's data-quality table says what to change."""

from __future__ import annotations

from datetime import datetime, timedelta

import duckdb
import polars as pl

from config import load_config
from reports.sections.data_quality import data_quality_section
from tests.unit.config_cases import FIXTURES
from transforms.intermediate.int_gpu_inventory_observed import SCHEMA, difference_advice
from transforms.intermediate.inventory_models import MODEL_DIFFERENCE, model_differences, model_hours
from warehouse.books.inventory import model_hours_read

START = datetime(2026, 3, 1)


def _observed(declared: pl.DataFrame, models: list[str]) -> pl.DataFrame:
    """The first declared card reported hour by hour with ``models[h]``; the second with the declared model."""
    (a, b) = declared.select("hostname", "gpu", "model_name").unique(["hostname", "gpu"]).sort(pl.all()).rows()[:2]
    rows = [(a[0], a[1], model, h) for h, model in enumerate(models)]
    rows += [(b[0], b[1], b[2], h) for h in range(len(models))]
    frame = pl.DataFrame(
        [
            ("sim", host, gpu, f"GPU-{host}-{gpu}", model, None, None, START + timedelta(hours=h), 60, "dcgm")
            for host, gpu, model, h in rows
        ],
        schema=SCHEMA,
        orient="row",
    )
    return frame


def test_a_card_reporting_another_model_is_listed_with_its_hours() -> None:
    declared = load_config(FIXTURES / "minimal.toml").inventory_frame()
    name = declared["model_name"][0]
    observed = _observed(declared, [name, "NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB HBM3", f" {name.upper()} "])
    (row,) = model_differences(declared, model_hours(observed)).iter_rows(named=True)
    assert (row["what"], row["declared"], row["observed"], row["hours"]) == (
        MODEL_DIFFERENCE,
        name,
        "NVIDIA H100 80GB HBM3",
        2,
    )
    assert (row["first_hour"], row["last_hour"]) == (START + timedelta(hours=1), START + timedelta(hours=2))
    advice = difference_advice(row)
    assert "reported model 'NVIDIA H100 80GB HBM3'" in advice and "model_name" in advice and "gpu_model" in advice


def test_the_warehouse_sql_counts_the_same_hours() -> None:
    declared = load_config(FIXTURES / "minimal.toml").inventory_frame()
    observed = _observed(declared, ["NVIDIA X", "NVIDIA X", "NVIDIA Y"])
    conn = duckdb.connect()
    conn.execute("CREATE SCHEMA intermediate")
    table = observed.with_columns(month=pl.lit(START.date()))
    conn.register("t", table)
    conn.execute("CREATE TABLE intermediate.int_gpu_inventory_observed AS SELECT * FROM t")
    sql = model_hours_read(conn, START, START + timedelta(days=1))
    assert sql.sort(pl.all()).equals(model_hours(observed).sort(pl.all()))
    shown = model_differences(declared, sql)
    assert shown["hours"].to_list() == [2, 1]


def test_the_review_table_names_the_difference() -> None:
    declared = load_config(FIXTURES / "minimal.toml").inventory_frame()
    rows = model_differences(declared, model_hours(_observed(declared, ["NVIDIA <b>X</b>"])))
    advice = [difference_advice(r) for r in rows.iter_rows(named=True)]
    empty = pl.DataFrame()
    html = str(
        data_quality_section(
            pl.DataFrame(schema={"rows": pl.Int64}),
            empty,
            pl.DataFrame(schema={"days": pl.Int64}),
            rows.with_columns(pl.Series("advice", advice)),
        ).render()
    )
    assert "NVIDIA &lt;b&gt;X&lt;/b&gt;" in html and "<b>X</b>" not in html and "model" in html
