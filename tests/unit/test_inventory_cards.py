"""Reading only the observed rows of cards that may differ gives the same hourly inventory."""

from __future__ import annotations

from datetime import datetime, timedelta

import duckdb
import polars as pl
import pytest

from config import EXAMPLE_CONFIG, load_config
from transforms.intermediate.int_gpu_inventory_observed import (
    SCHEMA,
    hourly_inventory,
    int_gpu_inventory_observed,
    inventory_differences,
)
from transforms.intermediate.inventory_cards import cards_that_may_differ, instance_counts
from warehouse.books.inventory import COUNTS_SQL, differing_rows

START = datetime(2026, 3, 1)
HOURS = 4
END = START + timedelta(hours=HOURS)
CONFIG = load_config(EXAMPLE_CONFIG)
DECLARED = CONFIG.inventory_frame()
MIG_CARD = DECLARED.filter(pl.col("gpu_i_profile").is_not_null()).row(0, named=True)
WHOLE_CARD = DECLARED.filter(pl.col("gpu_i_profile").is_null()).row(0, named=True)


def _rows(card: dict, instances: list[tuple], hours: range) -> list[tuple]:
    """instances: (gpu_i_id, gpu_i_profile) seen on ``card`` each hour of ``hours``."""
    return [
        (
            card["cluster"],
            card["hostname"],
            card["gpu"],
            "u",
            "m",
            gi_id,
            profile,
            START + timedelta(hours=h),
            9,
            "dcgm",
        )
        for h in hours
        for gi_id, profile in instances
    ]


def _declared_instances(card: dict) -> list[tuple]:
    same = DECLARED.filter((pl.col("hostname") == card["hostname"]) & (pl.col("gpu") == card["gpu"]))
    return list(same.select("gpu_i_id", "gpu_i_profile").iter_rows())


def _observed(rows: list[tuple]) -> pl.DataFrame:
    return int_gpu_inventory_observed(pl.DataFrame(rows, schema=SCHEMA, orient="row"))


AS_DECLARED = _rows(WHOLE_CARD, [(None, None)], range(HOURS))
AS_DECLARED += _rows(MIG_CARD, [(None, None), *_declared_instances(MIG_CARD)], range(HOURS))  # with the device row
ONE_3G = [(9, "3g.40gb")]
CASES = {
    "as declared": AS_DECLARED,
    "some declared instances": AS_DECLARED[:HOURS]
    + _rows(MIG_CARD, [(9, "3g.40gb")], range(2))
    + _rows(MIG_CARD, [(3, "1g.10gb"), (4, "1g.10gb")], range(2, HOURS)),
    "a profile's ids changing (read, judged as declared)": AS_DECLARED[:HOURS]
    + _rows(MIG_CARD, [(9, "3g.40gb")], range(2))
    + _rows(MIG_CARD, [(4, "3g.40gb")], range(2, HOURS)),
    "MIG on a card declared whole": AS_DECLARED + _rows(WHOLE_CARD, ONE_3G, range(1, 3)),
    "whole on a card declared MIG": AS_DECLARED[:HOURS]
    + _rows(MIG_CARD, _declared_instances(MIG_CARD), range(3))
    + _rows(MIG_CARD, [(None, None)], range(3, HOURS)),
    "more instances of a profile than declared": AS_DECLARED + _rows(MIG_CARD, [(11, "3g.40gb"), (12, "3g.40gb")], [2]),
    "a GPU not declared": AS_DECLARED + _rows({**WHOLE_CARD, "gpu": 99}, [(None, None)], [0]),
}


@pytest.mark.parametrize("case", list(CASES))
def test_filtered_rows_give_the_same_inventory_and_differences(case: str) -> None:
    observed = _observed(CASES[case])
    cards = cards_that_may_differ(DECLARED, instance_counts(observed))
    kept = observed.join(cards, on=["cluster", "hostname", "gpu"], how="semi")
    whole = hourly_inventory(DECLARED, observed, START, END, CONFIG.rates.mig_weight)
    assert hourly_inventory(DECLARED, kept, START, END, CONFIG.rates.mig_weight).equals(whole)
    assert inventory_differences(DECLARED, kept).equals(inventory_differences(DECLARED, observed))
    if case.startswith(("as declared", "some declared")):
        assert cards.is_empty() and whole.equals(DECLARED)
    elif case.startswith("a profile's ids"):
        assert cards.height == 1 and inventory_differences(DECLARED, observed).is_empty()
    else:
        assert cards.height == 1 and not inventory_differences(DECLARED, observed).is_empty()


def _stored(observed: pl.DataFrame) -> duckdb.DuckDBPyConnection:
    conn = duckdb.connect()
    conn.execute("CREATE SCHEMA intermediate")
    conn.register("observed", observed.with_columns(month=pl.lit(START.date())).to_arrow())
    conn.execute("CREATE TABLE intermediate.int_gpu_inventory_observed AS SELECT * FROM observed")
    return conn


@pytest.mark.parametrize("case", list(CASES))
def test_the_sql_counts_are_the_frames(case: str) -> None:
    observed = _observed(CASES[case])
    with _stored(observed) as conn:
        got = conn.sql(COUNTS_SQL, params=[START.date(), START, END]).pl()
    want = instance_counts(observed)
    assert got.cast(want.schema).sort(got.columns).equals(want.sort(want.columns))


def test_the_warehouse_reads_only_those_cards() -> None:
    observed = _observed(CASES["MIG on a card declared whole"])
    with _stored(observed) as conn:
        got = differing_rows(conn, CONFIG, START, END)
    card = (WHOLE_CARD["cluster"], WHOLE_CARD["hostname"], WHOLE_CARD["gpu"])
    assert set(got.select("cluster", "hostname", "gpu").unique().rows()) == {card}
    assert got.height == HOURS + 2  # its whole rows of every hour and the two hours' MIG rows
