"""DuckDB column types -> PostgreSQL column types: the one mapping.

The PostgreSQL names are the ones ``format_type()`` prints, so the types of a table already
in PostgreSQL compare with the mapped ones as text (``ddl.differences``). Every type the marts
use maps onto a type that holds its values exactly: DECIMAL keeps its precision and scale,
TIMESTAMP stays without time zone (cardhours' times are naive UTC), unsigned integers get the
next wider signed type. A type without a mapping (a LIST, a STRUCT) is refused by name.
"""

from __future__ import annotations

import re

DUCKDB_TO_POSTGRES: dict[str, str] = {
    "BOOLEAN": "boolean",
    "TINYINT": "smallint",
    "SMALLINT": "smallint",
    "INTEGER": "integer",
    "BIGINT": "bigint",
    "HUGEINT": "numeric(38,0)",
    "UTINYINT": "smallint",
    "USMALLINT": "integer",
    "UINTEGER": "bigint",
    "UBIGINT": "numeric(20,0)",
    "FLOAT": "real",
    "DOUBLE": "double precision",
    "VARCHAR": "text",
    "DATE": "date",
    "TIME": "time without time zone",
    "TIMESTAMP": "timestamp without time zone",
    "TIMESTAMP WITH TIME ZONE": "timestamp with time zone",
    "INTERVAL": "interval",
    "UUID": "uuid",
}
_DECIMAL = re.compile(r"^DECIMAL\((\d+),\s*(\d+)\)$")


class UnsupportedType(TypeError):
    """A column whose DuckDB type has no PostgreSQL type here."""


def postgres_type(duckdb_type: str, where: str) -> str:
    """The PostgreSQL type of a DuckDB column type (as ``information_schema`` spells it);
    ``where`` (``table.column``) names the column in the error."""
    decimal = _DECIMAL.match(duckdb_type)
    if decimal:
        return f"numeric({decimal.group(1)},{decimal.group(2)})"
    try:
        return DUCKDB_TO_POSTGRES[duckdb_type]
    except KeyError:
        raise UnsupportedType(
            f"{where} is {duckdb_type}, which cardhours does not publish to PostgreSQL (known: DECIMAL(p,s), "
            f"{', '.join(DUCKDB_TO_POSTGRES)}): leave the table out of [publish] marts, or map the type in "
            "warehouse/publish/pg_types.py"
        ) from None
