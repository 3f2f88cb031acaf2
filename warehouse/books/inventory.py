"""The inventory of each hour of a period: the config's, with the cards DCGM reported otherwise
replaced by what it reported (``intermediate.int_gpu_inventory_observed``)."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

import duckdb
import polars as pl

from transforms.intermediate.int_gpu_inventory_observed import SCHEMA, hourly_inventory
from warehouse.connection import read_frame

if TYPE_CHECKING:
    from config.models import Config

OBSERVED_SQL = (
    "SELECT * EXCLUDE (month) FROM intermediate.int_gpu_inventory_observed "
    "WHERE month = ? AND hour >= ? AND hour < ? ORDER BY cluster, hostname, gpu, hour, gpu_i_id NULLS FIRST"
)


def observed_rows(conn: duckdb.DuckDBPyConnection, start: datetime, end: datetime) -> pl.DataFrame:
    """The stored observed rows of [start, end) (none when the month was not built)."""
    return read_frame(conn, OBSERVED_SQL, [start.date().replace(day=1), start, end]).cast(SCHEMA)


def capacity_inventory(conn: duckdb.DuckDBPyConnection, config: Config, start: datetime, end: datetime) -> pl.DataFrame:
    """config/frames.py INVENTORY_SCHEMA + ``hour``: each hour's GPUs and MIG instances."""
    observed = observed_rows(conn, start, end)
    return hourly_inventory(config.inventory_frame(), observed, start, end, config.rates.mig_weight)
