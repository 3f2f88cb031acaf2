"""The inventory of each hour of a period: the config's, with the cards DCGM reported otherwise
replaced by what it reported (``intermediate.int_gpu_inventory_observed``). Only the rows of
cards that may differ are read (transforms/intermediate/inventory_cards.py)."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

import duckdb
import polars as pl

from contracts.sources import OBSERVED_BY_DCGM
from transforms.intermediate.int_gpu_inventory_observed import SCHEMA, hourly_inventory
from transforms.intermediate.inventory_cards import COUNTS_SCHEMA, cards_that_may_differ
from transforms.intermediate.inventory_models import MODEL_HOURS_SCHEMA
from warehouse.connection import read_frame

if TYPE_CHECKING:
    from config.models import Config

_PERIOD = "month = ? AND hour >= ? AND hour < ?"
OBSERVED_SQL = (
    f"SELECT * EXCLUDE (month) FROM intermediate.int_gpu_inventory_observed WHERE {_PERIOD} "
    "ORDER BY cluster, hostname, gpu, hour, gpu_i_id NULLS FIRST"
)
COUNTS_SQL = f"""
WITH observed AS (
    SELECT cluster, hostname, gpu, gpu_i_id, gpu_i_profile, hour FROM intermediate.int_gpu_inventory_observed
    WHERE {_PERIOD}
),
mig_hours AS (SELECT DISTINCT cluster, hostname, gpu, hour FROM observed WHERE gpu_i_profile IS NOT NULL)
SELECT cluster, hostname, gpu, gpu_i_profile, count(DISTINCT gpu_i_id) AS instances FROM observed
WHERE gpu_i_profile IS NOT NULL GROUP BY ALL
UNION ALL
SELECT DISTINCT o.cluster, o.hostname, o.gpu, NULL, 1 FROM observed o ANTI JOIN mig_hours m
    ON m.cluster = o.cluster AND m.hostname = o.hostname AND m.gpu = o.gpu AND m.hour = o.hour
WHERE o.gpu_i_profile IS NULL
"""  # transforms/intermediate/inventory_cards.instance_counts in SQL
CARDS_SQL = """
SELECT o.* EXCLUDE (month) FROM intermediate.int_gpu_inventory_observed o
SEMI JOIN (SELECT unnest(CAST(? AS VARCHAR[])) AS cluster, unnest(CAST(? AS VARCHAR[])) AS hostname,
                  unnest(CAST(? AS SMALLINT[])) AS gpu) c
  ON c.cluster = o.cluster AND c.hostname = o.hostname AND c.gpu = o.gpu
WHERE o.month = ? AND o.hour >= ? AND o.hour < ?
ORDER BY cluster, hostname, gpu, hour, gpu_i_id NULLS FIRST
"""

MODELS_SQL = f"""
SELECT cluster, hostname, gpu, model_name, count(DISTINCT hour) AS hours, min(hour) AS first_hour,
       max(hour) AS last_hour
FROM intermediate.int_gpu_inventory_observed
WHERE {_PERIOD} AND source = ? AND model_name IS NOT NULL
GROUP BY ALL ORDER BY ALL
"""  # transforms/intermediate/inventory_models.model_hours in SQL


def model_hours_read(conn: duckdb.DuckDBPyConnection, start: datetime, end: datetime) -> pl.DataFrame:
    """Per card and model DCGM reported in [start, end): the hours (``MODEL_HOURS_SCHEMA``)."""
    params = [start.date().replace(day=1), start, end, OBSERVED_BY_DCGM]
    return read_frame(conn, MODELS_SQL, params).cast(MODEL_HOURS_SCHEMA)


def observed_rows(conn: duckdb.DuckDBPyConnection, start: datetime, end: datetime) -> pl.DataFrame:
    """The stored observed rows of [start, end) (none when the month was not built)."""
    return read_frame(conn, OBSERVED_SQL, [start.date().replace(day=1), start, end]).cast(SCHEMA)


def differing_rows(conn: duckdb.DuckDBPyConnection, config: Config, start: datetime, end: datetime) -> pl.DataFrame:
    """The stored observed rows of [start, end) of the cards that may differ from the config."""
    period = [start.date().replace(day=1), start, end]
    counts = read_frame(conn, COUNTS_SQL, period).cast(COUNTS_SCHEMA)
    cards = cards_that_may_differ(config.inventory_frame(), counts)
    if cards.is_empty():
        return pl.DataFrame(schema=SCHEMA)
    lists = [cards.get_column(column).to_list() for column in ("cluster", "hostname", "gpu")]
    return read_frame(conn, CARDS_SQL, [*lists, *period]).cast(SCHEMA)


def capacity_inventory(conn: duckdb.DuckDBPyConnection, config: Config, start: datetime, end: datetime) -> pl.DataFrame:
    """config/frames.py INVENTORY_SCHEMA + ``hour``: each hour's GPUs and MIG instances."""
    observed = differing_rows(conn, config, start, end)
    return hourly_inventory(config.inventory_frame(), observed, start, end, config.rates.mig_weight)
