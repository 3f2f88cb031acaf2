"""The formula guard of every CSV export (OWASP CSV injection): text a spreadsheet would run.

A text cell whose first character, or first character after leading whitespace (any Unicode
whitespace: spaces, line breaks, no-break spaces), is one of FORMULA_START (``= + - @``, tab,
carriage return) is written with a ``'`` in front, so Excel, LibreOffice and Google Sheets
show it as text: `` =HYPERLINK("http://x")`` becomes ``' =HYPERLINK("http://x")``. Only text
(String) columns are guarded: a number column's ``-2.5`` stays a number, a String column's
``-2+3`` becomes ``'-2+3``. Null and empty stay as they are. Parquet files keep the raw
values (typed data, not opened as a sheet).
"""

from __future__ import annotations

import polars as pl
import polars.selectors as cs

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
PREFIX = "'"
# polars (Rust regex) pattern: optional leading whitespace, then one of FORMULA_START (each as \x{..})
_DANGEROUS = r"^\s*[" + "".join(f"\\x{{{ord(c):02X}}}" for c in FORMULA_START) + "]"


def formula_guard(text: pl.Expr) -> pl.Expr:
    """``text`` (a String expression) with PREFIX in front of the values a spreadsheet would run
    as a formula; keeps ``text``'s name."""
    return pl.when(text.str.contains(_DANGEROUS)).then(PREFIX + text).otherwise(text).name.keep()


def guard_text_columns(frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` with every text column (String, Categorical) guarded; other columns untouched."""
    text_columns = frame.select(cs.string(include_categorical=True)).columns
    return frame.with_columns(formula_guard(pl.col(c).cast(pl.String)) for c in text_columns)
