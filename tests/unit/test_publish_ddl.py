"""The publication's PostgreSQL shapes: every public mart's DuckDB columns map onto PostgreSQL
types (one mapping), comments come from docs/marts.md, a changed column is named, and
``[publish] marts`` is checked against the declared tables."""

from __future__ import annotations

import pytest

from config.publish import PublishConfig
from pipelines.publish import PUBLIC_MARTS, PublishError, mart_name, selected_marts
from pipelines.tables import FCT_CHARGEBACK_JOBS, FCT_JOB_USAGE, MART_CLUSTER_MONTHLY, TABLES
from warehouse import connect
from warehouse.publish.ddl import differences, duckdb_columns, pg_table
from warehouse.publish.descriptions import column_descriptions
from warehouse.publish.pg_types import UnsupportedType, postgres_type


@pytest.fixture(scope="module")
def duck():
    with connect(":memory:") as conn:  # migrated: the tables as the warehouse declares them
        yield conn


def _settings(**more) -> PublishConfig:
    return PublishConfig(host="db", database="analytics", user="cardhours", **more)


@pytest.mark.parametrize(
    ("duckdb_type", "expected"),
    [
        ("VARCHAR", "text"),
        ("DOUBLE", "double precision"),
        ("BIGINT", "bigint"),
        ("SMALLINT", "smallint"),
        ("BOOLEAN", "boolean"),
        ("DATE", "date"),
        ("TIMESTAMP", "timestamp without time zone"),
        ("DECIMAL(18,6)", "numeric(18,6)"),
        ("DECIMAL(9,6)", "numeric(9,6)"),
        ("UBIGINT", "numeric(20,0)"),
    ],
)
def test_types_map_onto_postgres_types_that_hold_the_values(duckdb_type: str, expected: str) -> None:
    assert postgres_type(duckdb_type, "t.c") == expected


def test_a_type_without_a_mapping_is_refused_naming_the_column() -> None:
    with pytest.raises(UnsupportedType, match=r"marts\.x\.hosts is VARCHAR\[\].*\[publish\] marts"):
        postgres_type("VARCHAR[]", "marts.x.hosts")


def test_the_public_marts_are_the_parquet_tables_and_each_maps(duck) -> None:
    assert PUBLIC_MARTS == tuple(table for table in TABLES if table.parquet)
    assert FCT_JOB_USAGE in PUBLIC_MARTS and FCT_CHARGEBACK_JOBS in PUBLIC_MARTS
    for table in PUBLIC_MARTS:
        columns = duckdb_columns(duck, table.name)
        shape = pg_table(table.name, table.period, columns, "bi")
        assert [c.name for c in shape.columns] == [name for name, _ in columns]
        assert shape.label == f"bi.{mart_name(table)}" and shape.period in [c.name for c in shape.columns]


def test_comments_come_from_the_documented_meanings(duck) -> None:
    shape = pg_table(FCT_JOB_USAGE.name, "month", duckdb_columns(duck, FCT_JOB_USAGE.name), "bi")
    comments = {c.name: c.comment for c in shape.columns}
    assert comments["gpu_hours"] == column_descriptions("marts.fct_job_usage")["gpu_hours"]
    assert "card-hours" in comments["gpu_hours"] and comments["month"].startswith("first day of the month")
    source = FCT_CHARGEBACK_JOBS.name
    jobs = pg_table(source, FCT_CHARGEBACK_JOBS.period, duckdb_columns(duck, source), "bi")
    assert jobs.period == "charge_month" and {c.name: c.pg_type for c in jobs.columns}["cost"] == "numeric(18,2)"


def test_a_changed_column_is_named_with_both_types(duck) -> None:
    shape = pg_table(MART_CLUSTER_MONTHLY.name, "month", duckdb_columns(duck, MART_CLUSTER_MONTHLY.name), "bi")
    existing = [(c.name, c.pg_type) for c in shape.columns]
    assert differences(shape, existing) == []
    first, second = existing[0], existing[1]
    changed = [(first[0], "integer"), *existing[2:], ("retired_column", "text")]
    assert differences(shape, changed) == [
        f"column {second[0]} ({second[1]}) is new in the mart",
        "column retired_column (text) is no longer in the mart",
        f"column {first[0]} is integer in PostgreSQL but {first[1]} in the mart",
    ]


def test_publish_marts_default_to_every_public_mart_and_unknown_names_are_named() -> None:
    assert selected_marts(_settings()) == list(PUBLIC_MARTS)
    chosen = selected_marts(_settings(marts=["mart_cluster_monthly", "fct_job_usage"]))
    assert chosen == [FCT_JOB_USAGE, MART_CLUSTER_MONTHLY]  # declaration order
    with pytest.raises(
        PublishError, match=r"\[publish\] marts: unknown mart 'fct_job_usag'; did you mean 'fct_job_usage'"
    ):
        selected_marts(_settings(marts=["fct_job_usag"]))
    with pytest.raises(PublishError, match="unknown mart 'stg_slurm__jobs'"):  # declared, but not public
        selected_marts(_settings(marts=["stg_slurm__jobs"]))
