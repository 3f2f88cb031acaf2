"""Read OpenMetrics / Prometheus text (dcgm-exporter series, as promtool back-fills them) into LongSamples.

A sample line is ``metric{label="value",...} value timestamp``; ``#`` lines (``# HELP``,
``# TYPE``, ``# EOF``) and blank lines are skipped. Timestamps are OpenMetrics seconds
(fractions allowed) and become ``Datetime("us")``; every sample needs one. A timestamp
beyond the year 5000 is taken for milliseconds (Prometheus text format) and refused
rather than silently placed in the far future, as promtool 2.42 does.

Speed: the file is scanned as one string column (polars, streaming) and each line split at
its first ``"} "`` into the series text and ``value timestamp``; only the few distinct
series texts are parsed with regexes. If any line does not split cleanly that way (a
label value containing ``"} "``, a metric without labels, trailing text), the whole file
is read again with a full-line regex, so the fast path never guesses.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import polars as pl

from sources.prometheus import LongSamples

__all__ = ["OpenMetricsError", "read_openmetrics", "parse_openmetrics"]

_NAME = r"[A-Za-z_:][A-Za-z0-9_:]*"
_PAIR = r'[A-Za-z_][A-Za-z0-9_]*="(?:[^"\\]|\\.)*"'
_BLOCK = r'(?:[^"}]|"(?:[^"\\]|\\.)*")*'
# name, optional {labels}, value, optional timestamp, optional exemplar / comment
_LINE = rf"^({_NAME})(?:\{{({_BLOCK})\}})?[ \t]+(\S+)(?:[ \t]+([^#\s]\S*))?(?:[ \t]+#.*)?[ \t]*$"
_MAX_SECONDS = 1e11  # 5138-11-16: larger timestamps are milliseconds, not seconds
_EXAMPLES = 3


class OpenMetricsError(ValueError):
    """The text is not OpenMetrics this reader can take without guessing."""


def scan_lines(path: Path) -> pl.LazyFrame:
    """The file's lines that are not comments, one string column ``line``, lazily."""
    scan = pl.scan_csv(
        path,
        has_header=False,
        separator="\x00",
        quote_char=None,
        comment_prefix="#",
        new_columns=["line"],
        schema={"line": pl.String},
    )
    return scan.filter(pl.col("line").str.strip_chars().str.len_bytes() > 0)


def _fast(lines: pl.LazyFrame) -> pl.LazyFrame:
    """head (``name{labels`` without the closing brace), value text, timestamp text."""
    head = pl.col("line").str.split_exact("} ", 1).struct.rename_fields(["head", "rest"])
    split = lines.select(head).unnest("line")
    rest = pl.col("rest").str.split_exact(" ", 1).struct.rename_fields(["value", "ts"])
    return split.select("head", rest, pl.lit(None, pl.String).alias("line")).unnest("rest")


def _slow(lines: pl.LazyFrame) -> pl.LazyFrame:
    parts = pl.col("line").str.extract_groups(_LINE).struct.rename_fields(["name", "labels", "value", "ts"])
    parsed = lines.with_columns(parts.alias("parts")).unnest("parts")
    head = pl.when(pl.col("name").is_not_null()).then(
        pl.concat_str(pl.col("name"), pl.lit("{"), pl.col("labels").fill_null(""))
    )
    return parsed.select(head.alias("head"), "value", "ts", "line")


def _typed(parsed: pl.LazyFrame, start: datetime, end: datetime) -> pl.LazyFrame:
    """Cast value and ts; keep rows in ``[start, end)`` and every row that failed to parse
    (``bad``, with its ``line`` when known; ``millis``: its timestamp looks like milliseconds)."""
    seconds = pl.col("ts").cast(pl.Float64, strict=False)
    value = pl.col("value").cast(pl.Float64, strict=False)
    millis = seconds >= _MAX_SECONDS
    bad = pl.col("head").is_null() | value.is_null() | seconds.is_null() | millis
    typed = parsed.select(
        "head",
        value.alias("value"),
        pl.when(~millis).then((seconds * 1e6).round().cast(pl.Int64)).cast(pl.Datetime("us")).alias("ts"),
        bad.alias("bad"),
        millis.fill_null(False).alias("millis"),
        pl.when(bad).then(pl.col("line")).alias("line"),
    )
    keep = pl.col("bad") | ((pl.col("ts") >= start) & (pl.col("ts") < end))
    return typed.filter(keep).with_columns(pl.col("head").cast(pl.Categorical))


def _unescape(value: pl.Expr) -> pl.Expr:
    """OpenMetrics label-value escapes: ``\\\\`` backslash, ``\\"`` quote, ``\\n`` line feed."""
    return (
        value.str.replace_all("\\\\", "\x00", literal=True)
        .str.replace_all('\\"', '"', literal=True)
        .str.replace_all("\\n", "\n", literal=True)
        .str.replace_all("\x00", "\\", literal=True)
    )


def _series(heads: pl.Series) -> tuple[pl.DataFrame, pl.DataFrame] | None:
    """(series frame, ``head`` -> ``series_id``), or None when a head is not ``name{labels``."""
    parts = (
        pl.DataFrame({"head": heads.cast(pl.String)})
        .with_columns(
            pl.col("head")
            .str.extract_groups(rf"^({_NAME})\{{(.*)$")
            .struct.rename_fields(["__name__", "block"])
            .alias("p")
        )
        .unnest("p")
    )
    leftover = pl.col("block").str.replace_all(_PAIR, "").str.replace_all(r"[,\s]", "")
    if parts.select((pl.col("__name__").is_null() | (leftover != "")).any()).item():
        return None
    pairs = (
        parts.select("head", "__name__", pl.col("block").str.extract_all(_PAIR).alias("pair"))
        .explode("pair")
        .filter(pl.col("pair").is_not_null())
        .with_columns(pl.col("pair").str.split_exact('="', 1).struct.rename_fields(["label", "raw"]).alias("p"))
        .unnest("p")
    )
    repeated = pairs.filter(pl.struct("head", "label").is_duplicated())
    if repeated.height:
        raise OpenMetricsError(f"a series repeats a label: {repeated['head'][0]}}}")
    canonical = (
        pairs.sort("label")
        .group_by("head")
        .agg(pl.concat_str("label", pl.lit('="'), "raw").str.join(",").alias("canon"))
    )
    ids = (
        parts.select("head", "__name__")
        .join(canonical, on="head", how="left")
        .with_columns(pl.concat_str("__name__", pl.lit("{"), pl.col("canon").fill_null("")).alias("canon"))
        .with_columns((pl.col("canon").rank("dense") - 1).cast(pl.UInt32).alias("series_id"))
    )
    values = pairs.with_columns(_unescape(pl.col("raw").str.strip_suffix('"')).alias("value"))
    labels = ids.join(values.select("head", "label", "value"), on="head").unique(["series_id", "label"])
    series = ids.select("series_id", "__name__").unique("series_id").sort("series_id")
    if labels.height:
        wide = labels.pivot(on="label", index="series_id", values="value")
        series = series.join(wide.select("series_id", *sorted(wide.columns[1:])), on="series_id", how="left")
    return series, ids.select(pl.col("head").cast(pl.Categorical), "series_id")


def _refuse(rows: pl.DataFrame, path: Path) -> None:
    bad = rows.filter(pl.col("bad"))
    if not bad.height:
        return
    examples = "; ".join(repr(line) for line in bad["line"].head(_EXAMPLES).to_list())
    hint = " (timestamps must be OpenMetrics seconds; these look like milliseconds)" if bad["millis"].any() else ""
    raise OpenMetricsError(f"{path}: {bad.height} lines are not samples with a value and a timestamp{hint}: {examples}")


def parse_openmetrics(path: str | Path, start: datetime, end: datetime) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(series, samples) of every sample with ``start <= ts < end``, shaped as LongSamples."""
    path = Path(path)
    if not path.is_file():
        raise OpenMetricsError(f"{path}: not a file")
    rows = _typed(_fast(scan_lines(path)), start, end).collect(engine="streaming")
    mapping = None if rows["bad"].any() else _series(rows["head"].unique())
    if mapping is None:
        rows = _typed(_slow(scan_lines(path)), start, end).collect(engine="streaming")
        _refuse(rows, path)
        mapping = _series(rows["head"].unique())
        if mapping is None:
            raise OpenMetricsError(f"{path}: a series' labels do not parse")
    series, ids = mapping
    samples = (
        rows.join(ids, on="head")
        .select("series_id", "ts", "value")
        .unique(["series_id", "ts", "value"])
        .sort(["series_id", "ts"])
    )
    clash = samples.filter(pl.struct("series_id", "ts").is_duplicated())
    if clash.height:
        raise OpenMetricsError(f"{path}: {clash.height} samples share a series and timestamp with other values")
    return series, samples


def read_openmetrics(path: str | Path, start: datetime, end: datetime) -> LongSamples:
    """Every sample of the file with ``start <= ts < end`` as LongSamples (docs/design.md)."""
    return LongSamples(*parse_openmetrics(path, start, end))
