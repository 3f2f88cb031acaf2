"""Label normalization of an exporter's series (LongSamples.series -> one label set per series).

Input: one row per series: ``series_id`` (UInt32), ``__name__`` and one String column per
label name as the server spells it (any subset may be absent; empty strings count as
absent), and the exporter's mapping (``contracts.exporters``: metric -> signal, label ->
column). Output: ``series_id, field`` (the signal) and the label columns of
``RAW_SAMPLE_SCHEMA`` (``LABEL_COLUMNS``), one row per input series, sorted by ``series_id``.

Mapping (per series), by the exporter's ``SeriesLabels``:

- ``hostname``: the first of the exporter's hostname labels that is set (dcgm-exporter:
  ``Hostname`` else ``hostname``); a later one that is set while an earlier one is goes to
  ``extra_labels``.
- Integer labels (dcgm-exporter: ``gpu``, ``GPU_I_ID``) -> Int16 (a value that is not an
  integer in Int16 range raises ``ValueError`` naming the series: such a series cannot be
  given a row identity, and failing the partition beats guessing or dropping it); string
  labels -> their column.
- Kubernetes workload (``pod``, ``namespace``, ``container``): with ``honor_labels: false``
  Prometheus renames the exporter's ``pod``/``namespace``/``container`` to
  ``exported_*`` and sets the plain ones to the exporter's own pod. A scrape job
  (the ``job`` label; the whole frame when there is no ``job`` column) counts as renamed
  when any of its series carries an ``exported_*`` label; then the workload is
  ``exported_*`` and the plain labels go to ``extra_labels`` on every series of that job,
  including idle GPUs without a workload (deciding per series would charge those to the
  exporter pod). A day read in shards passes the decision taken over the whole day's
  series (``renamed_jobs``). ``kubernetes_labels="exported"``/``"direct"`` forces the choice. Older
  spellings (dcgm-exporter: ``pod_name``/``pod_namespace``) fill the column when the
  preferred label is absent.
- Every other label, and every displaced one, goes into ``extra_labels``: a JSON object
  with sorted keys, compact separators and UTF-8 text, exactly
  ``json.dumps(labels, sort_keys=True, separators=(",", ":"), ensure_ascii=False)``;
  ``"{}"`` when none. A column the exporter has no label for is null.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

import polars as pl

from contracts.exporters import Exporter, SeriesLabels
from contracts.schemas import SERIES_LABEL_SCHEMA

SCHEMA: dict[str, pl.DataType] = {"series_id": pl.UInt32(), "field": pl.String(), **SERIES_LABEL_SCHEMA}
RENAMED_PREFIX = "exported_"  # Prometheus' rename of a target label that clashes with its own

KubernetesLabels = Literal["auto", "exported", "direct"]


def _label(columns: set[str], name: str) -> pl.Expr:
    return pl.col(name) if name in columns else pl.lit(None, dtype=pl.String())


def exported_labels(rules: SeriesLabels) -> list[str]:
    """The labels whose presence on any series of a scrape job says Prometheus renamed its workload labels."""
    return [RENAMED_PREFIX + names[0] for names in rules.workload.values()]


def _renamed(
    columns: set[str], rules: SeriesLabels, mode: KubernetesLabels, decided: Mapping[str | None, bool] | None
) -> pl.Expr:
    """Per series: do the plain pod/namespace/container labels belong to the exporter?"""
    if mode != "auto":
        return pl.lit(mode == "exported")
    if decided is not None:  # decided over more series than these (a sharded read's census)
        if "job" not in columns:
            return pl.lit(decided.get(None, False))
        known = {job: value for job, value in decided.items() if job is not None}
        by_job = pl.col("job").replace_strict(known, default=False, return_dtype=pl.Boolean())
        return pl.when(pl.col("job").is_null()).then(pl.lit(decided.get(None, False))).otherwise(by_job)
    exported = exported_labels(rules)
    present = [pl.col(name).is_not_null() for name in exported if name in columns]
    if not present:
        return pl.lit(False)
    anywhere = pl.any_horizontal(present).any()
    return anywhere.over("job") if "job" in columns else anywhere


def _field(frame: pl.DataFrame, exporter: Exporter) -> pl.Expr:
    if "__name__" not in frame.columns:
        raise ValueError("the series frame has no __name__ column")
    metric_signals = exporter.metric_signals
    names = frame.get_column("__name__").unique().to_list()
    unknown = sorted({"<no __name__>" if name is None else name for name in names} - set(metric_signals))
    if unknown:
        raise ValueError(f"metrics not in the {exporter.title} mapping: {unknown}; mapped: {sorted(metric_signals)}")
    return pl.col("__name__").replace_strict(metric_signals, return_dtype=pl.String())


def _check_integers(frame: pl.DataFrame, columns: set[str], rules: SeriesLabels) -> None:
    for label in (name for name in rules.integers if name in columns):
        parsed = pl.col(label).str.strip_chars().str.to_integer(strict=False)
        bad = frame.filter(pl.col(label).is_not_null() & ~parsed.is_between(-(2**15), 2**15 - 1).fill_null(False))
        if bad.height:
            shown = [
                {k: v for k, v in row.items() if v is not None and k != "series_id"}
                for row in bad.head(5).iter_rows(named=True)
            ]
            raise ValueError(f"label {label} is not an Int16 on {bad.height} series, e.g. {shown}")


def _json_member(column: str) -> pl.Expr:
    """``"key":"value"`` for one label, escaped by polars' JSON encoder."""
    return pl.struct(pl.col(column)).struct.json_encode().str.strip_prefix("{").str.strip_suffix("}")


def _workload(columns: set[str], rules: SeriesLabels, renamed: pl.Expr) -> dict[str, list[pl.Expr]]:
    """Per workload column: its candidate values in preference order (the first label, plain
    or ``exported_*`` as the scrape job says, then the older spellings)."""

    def label(name):
        return _label(columns, name)

    return {
        column: [
            pl.when(renamed).then(label(RENAMED_PREFIX + names[0])).otherwise(label(names[0])),
            *(label(name) for name in names[1:]),
        ]
        for column, names in rules.workload.items()
    }


def _consumed_when(columns: set[str], rules: SeriesLabels, renamed: pl.Expr) -> dict[str, pl.Expr]:
    """Labels a column takes only sometimes -> when it takes them (else they go to extra_labels)."""

    def label(name):
        return _label(columns, name)

    when: dict[str, pl.Expr] = {}
    for i, name in enumerate(rules.hostname[1:], start=1):
        when[name] = pl.all_horizontal([label(earlier).is_null() for earlier in rules.hostname[:i]])
    candidates = _workload(columns, rules, renamed)
    for column, names in rules.workload.items():
        when[names[0]] = ~renamed
        when[RENAMED_PREFIX + names[0]] = renamed
        for i, name in enumerate(names[1:], start=1):
            when[name] = pl.coalesce(candidates[column][:i]).is_null()
    return when


def _extra_labels(columns: set[str], rules: SeriesLabels, renamed: pl.Expr) -> pl.Expr:
    """JSON object of the labels not consumed by a column, sorted by key."""
    always = {"series_id", "__name__", *rules.integers, *rules.strings, *rules.hostname[:1]}
    consumed_when = _consumed_when(columns, rules, renamed)
    members = []
    for name in sorted(columns - always):
        keep = pl.col(name).is_not_null()
        if name in consumed_when:
            keep = keep & ~consumed_when[name]
        members.append(pl.when(keep).then(_json_member(name)))
    if not members:
        return pl.lit("{}")
    return pl.concat_str([pl.lit("{"), pl.concat_str(members, separator=",", ignore_nulls=True), pl.lit("}")])


def _columns(columns: set[str], rules: SeriesLabels, renamed: pl.Expr) -> dict[str, pl.Expr]:
    """Label column -> its value per series (only the columns the exporter has labels for)."""

    def label(name):
        return _label(columns, name)

    out: dict[str, pl.Expr] = {}
    if rules.hostname:
        out["hostname"] = pl.coalesce([label(name) for name in rules.hostname])
    for name, column in rules.integers.items():
        out[column] = label(name).str.strip_chars().str.to_integer(strict=False)
    for name, column in rules.strings.items():
        out[column] = label(name)
    for column, candidates in _workload(columns, rules, renamed).items():
        out[column] = pl.coalesce(candidates)
    return out


def normalize_series(
    series: pl.DataFrame,
    exporter: Exporter,
    *,
    kubernetes_labels: KubernetesLabels = "auto",
    renamed_jobs: Mapping[str | None, bool] | None = None,
) -> pl.DataFrame:
    """One row per series: ``series_id, field`` and the ``RAW_SAMPLE_SCHEMA`` label columns.

    ``renamed_jobs``: the ``auto`` decision per scrape job (``None``: series without ``job``),
    when it was taken over more series than ``series`` (every series of a day read in shards:
    sources/prometheus/shards.py); a job it does not name counts as not renamed.

    Raises ``ValueError`` for a metric missing from the exporter's mapping (naming it), a
    duplicate ``series_id``, or an integer label that is not an Int16 (naming the series' labels).
    """
    if kubernetes_labels not in ("auto", "exported", "direct"):
        raise ValueError(f"kubernetes_labels must be auto, exported or direct, not {kubernetes_labels!r}")
    if series.get_column("series_id").is_duplicated().any():
        raise ValueError("series_id is not unique in the series frame")
    labels = [name for name in series.columns if name not in ("series_id", "__name__")]
    frame = series.with_columns(
        pl.col("series_id").cast(pl.UInt32()),
        *(pl.col(name).cast(pl.String()).replace("", None).alias(name) for name in labels),
    )
    rules = exporter.labels
    field = _field(frame, exporter)
    columns = set(frame.columns)
    _check_integers(frame, columns, rules)
    renamed = _renamed(columns, rules, kubernetes_labels, renamed_jobs)
    values = _columns(columns, rules, renamed)
    values["extra_labels"] = _extra_labels(columns, rules, renamed)
    out = frame.select(
        pl.col("series_id"),
        field.alias("field"),
        *(values.get(column, pl.lit(None)).alias(column) for column in SERIES_LABEL_SCHEMA),
    )
    return out.cast(SCHEMA).sort("series_id")
