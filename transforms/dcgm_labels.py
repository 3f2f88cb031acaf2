"""Label normalization of dcgm-exporter series (LongSamples.series -> one staging label set).

Input: one row per series: ``series_id`` (UInt32), ``__name__`` and one String column per
label name as the server spells it (any subset may be absent; empty strings count as
absent). Output: ``series_id, field`` and the label columns of ``RAW_SAMPLE_SCHEMA``
(:data:`LABEL_COLUMNS`), one row per input series, sorted by ``series_id``.

Mapping (per series):

- ``Hostname`` (released exporters) else ``hostname`` (newer) -> ``hostname``; when both
  are set ``Hostname`` wins and ``hostname`` goes to ``extra_labels``.
- ``gpu`` -> ``gpu`` and ``GPU_I_ID`` -> ``gpu_i_id`` (Int16; a value that is not an
  integer in Int16 range raises ``ValueError`` naming the series: such a series cannot be
  given a row identity, and failing the partition beats guessing or dropping it).
- ``UUID`` -> ``uuid``, ``modelName`` -> ``model_name``, ``pci_bus_id``, ``device``,
  ``GPU_I_PROFILE`` -> ``gpu_i_profile``, ``hpc_job``.
- Kubernetes workload (``pod``, ``namespace``, ``container``): with ``honor_labels: false``
  Prometheus renames the exporter's ``pod``/``namespace``/``container`` to
  ``exported_*`` and sets the plain ones to the exporter's own pod. A scrape job
  (the ``job`` label; the whole frame when there is no ``job`` column) counts as renamed
  when any of its series carries an ``exported_*`` label; then the workload is
  ``exported_*`` and the plain labels go to ``extra_labels`` on every series of that job,
  including idle GPUs without a workload (deciding per series would charge those to the
  exporter pod). ``kubernetes_labels="exported"``/``"direct"`` forces the choice. The old
  ``pod_name``/``pod_namespace`` fill ``pod``/``namespace`` when the preferred label is
  absent.
- Every other label, and every displaced one, goes into ``extra_labels``: a JSON object
  with sorted keys, compact separators and UTF-8 text, exactly
  ``json.dumps(labels, sort_keys=True, separators=(",", ":"), ensure_ascii=False)``;
  ``"{}"`` when none.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

import polars as pl

from cardhours.schemas import SAMPLE_LABEL_SCHEMA, SAMPLE_VALUE_COLUMNS, SAMPLE_WORKLOAD_LABEL_SCHEMA

LABEL_SCHEMA: dict[str, pl.DataType] = {**SAMPLE_LABEL_SCHEMA, **SAMPLE_WORKLOAD_LABEL_SCHEMA}
LABEL_COLUMNS: list[str] = list(LABEL_SCHEMA)
SCHEMA: dict[str, pl.DataType] = {"series_id": pl.UInt32(), "field": pl.String(), **LABEL_SCHEMA}

# Labels that always map to one column (and so never reach extra_labels).
DIRECT_LABELS: dict[str, str] = {
    "UUID": "uuid",
    "modelName": "model_name",
    "pci_bus_id": "pci_bus_id",
    "device": "device",
    "GPU_I_PROFILE": "gpu_i_profile",
    "hpc_job": "hpc_job",
}
INTEGER_LABELS: dict[str, str] = {"gpu": "gpu", "GPU_I_ID": "gpu_i_id"}
EXPORTED = ("exported_pod", "exported_namespace", "exported_container")
ALWAYS_CONSUMED = frozenset({"series_id", "__name__", *DIRECT_LABELS, *INTEGER_LABELS, "Hostname"})

KubernetesLabels = Literal["auto", "exported", "direct"]


def _label(columns: set[str], name: str) -> pl.Expr:
    return pl.col(name) if name in columns else pl.lit(None, dtype=pl.String())


def _renamed(columns: set[str], mode: KubernetesLabels) -> pl.Expr:
    """Per series: do the plain pod/namespace/container labels belong to the exporter?"""
    if mode != "auto":
        return pl.lit(mode == "exported")
    present = [pl.col(name).is_not_null() for name in EXPORTED if name in columns]
    if not present:
        return pl.lit(False)
    anywhere = pl.any_horizontal(present).any()
    return anywhere.over("job") if "job" in columns else anywhere


def _field(frame: pl.DataFrame, metric_fields: Mapping[str, str]) -> pl.Expr:
    bad_targets = sorted(set(metric_fields.values()) - set(SAMPLE_VALUE_COLUMNS))
    if bad_targets:
        raise ValueError(f"metric_fields maps to unknown raw columns {bad_targets}; known: {SAMPLE_VALUE_COLUMNS}")
    if "__name__" not in frame.columns:
        raise ValueError("the series frame has no __name__ column")
    names = frame.get_column("__name__").unique().to_list()
    unknown = sorted({"<no __name__>" if name is None else name for name in names} - set(metric_fields))
    if unknown:
        raise ValueError(f"metrics not in metric_fields: {unknown}; mapped: {sorted(metric_fields)}")
    return pl.col("__name__").replace_strict(dict(metric_fields), return_dtype=pl.String())


def _check_integers(frame: pl.DataFrame, columns: set[str]) -> None:
    for label in (name for name in INTEGER_LABELS if name in columns):
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


def _extra_labels(columns: set[str], renamed: pl.Expr) -> pl.Expr:
    """JSON object of the labels not consumed by a column, sorted by key."""
    consumed_when: dict[str, pl.Expr] = {
        "hostname": _label(columns, "Hostname").is_null(),
        "pod": ~renamed,
        "namespace": ~renamed,
        "container": ~renamed,
        **{name: renamed for name in EXPORTED},
        "pod_name": pl.when(renamed).then(_label(columns, "exported_pod")).otherwise(_label(columns, "pod")).is_null(),
        "pod_namespace": pl.when(renamed)
        .then(_label(columns, "exported_namespace"))
        .otherwise(_label(columns, "namespace"))
        .is_null(),
    }
    members = []
    for name in sorted(columns - ALWAYS_CONSUMED):
        keep = pl.col(name).is_not_null()
        if name in consumed_when:
            keep = keep & ~consumed_when[name]
        members.append(pl.when(keep).then(_json_member(name)))
    if not members:
        return pl.lit("{}")
    return pl.concat_str([pl.lit("{"), pl.concat_str(members, separator=",", ignore_nulls=True), pl.lit("}")])


def normalize_series(
    series: pl.DataFrame,
    metric_fields: Mapping[str, str],
    *,
    kubernetes_labels: KubernetesLabels = "auto",
) -> pl.DataFrame:
    """One row per series: ``series_id, field`` and the ``RAW_SAMPLE_SCHEMA`` label columns.

    Raises ``ValueError`` for a metric missing from ``metric_fields`` (naming it), a
    ``metric_fields`` target that is not a raw value column, a duplicate ``series_id``, or
    a ``gpu``/``GPU_I_ID`` that is not an Int16 (naming the series' labels).
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
    field = _field(frame, metric_fields)
    columns = set(frame.columns)
    _check_integers(frame, columns)
    label = lambda name: _label(columns, name)  # noqa: E731
    renamed = _renamed(columns, kubernetes_labels)
    workload = {
        "pod": pl.coalesce(pl.when(renamed).then(label("exported_pod")).otherwise(label("pod")), label("pod_name")),
        "namespace": pl.coalesce(
            pl.when(renamed).then(label("exported_namespace")).otherwise(label("namespace")), label("pod_namespace")
        ),
        "container": pl.when(renamed).then(label("exported_container")).otherwise(label("container")),
    }
    out = frame.select(
        pl.col("series_id"),
        field.alias("field"),
        pl.coalesce(label("Hostname"), label("hostname")).alias("hostname"),
        *(label(raw).str.strip_chars().str.to_integer(strict=False).alias(col) for raw, col in INTEGER_LABELS.items()),
        *(label(raw).alias(col) for raw, col in DIRECT_LABELS.items()),
        *(expr.alias(col) for col, expr in workload.items()),
        _extra_labels(columns, renamed).alias("extra_labels"),
    )
    return out.select(list(SCHEMA)).cast(SCHEMA).sort("series_id")
