"""What an exporter mapping declares: its metric names -> signals, its label names -> label columns.

An ``Exporter`` is data only. The readers (``sources.series_labels``, ``sources.series_pivot``,
the Prometheus and file sources) take one and know no exporter by name; the simulator and
the tests write series in an exporter's names from the same declaration.

Labels (``SeriesLabels``), per series:

- ``hostname``: label names in preference order; the first one set fills ``hostname``.
  The first name is always consumed; a later one only when every earlier one is unset,
  else it goes to ``extra_labels``.
- ``integers`` / ``strings``: label -> column, Int16 (a value that is not an Int16 fails
  the read, naming the series) or String.
- ``workload``: ``pod``/``namespace``/``container`` -> label names, the label the exporter
  sets first, then older spellings that fill the column when it is unset. Prometheus
  renames a target label that clashes with its own to ``exported_<label>``; the reader
  decides per scrape job which of the two is the workload (``sources.series_labels``).
- A column no rule fills is null; every label no rule consumes goes to ``extra_labels``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

import polars as pl

from contracts.schemas import LABEL_COLUMNS, SERIES_LABEL_SCHEMA
from contracts.signals import BY_NAME

WORKLOAD_COLUMNS = ("pod", "namespace", "container")


@dataclass(frozen=True)
class ExporterMetric:
    """One metric of an exporter: its name, the signal it carries, and the unit factor
    (exporter value x ``scale`` = the value in the signal's unit)."""

    name: str
    signal: str
    scale: float = 1.0
    help: str = ""  # the exporter's own description (the simulator writes it as # HELP)


@dataclass(frozen=True)
class SeriesLabels:
    """The exporter's label names for each label column (module doc)."""

    hostname: tuple[str, ...]
    integers: Mapping[str, str] = field(default_factory=dict)
    strings: Mapping[str, str] = field(default_factory=dict)
    workload: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        columns = [
            *(["hostname"] if self.hostname else []),
            *self.integers.values(),
            *self.strings.values(),
            *self.workload,
        ]
        names = [*self.hostname, *self.integers, *self.strings, *(n for ns in self.workload.values() for n in ns)]
        problems = []
        if duplicated := sorted({c for c in columns if columns.count(c) > 1}):
            problems.append(f"columns filled by two rules: {duplicated}")
        if unknown := sorted(set(columns) - set(LABEL_COLUMNS) | ({"extra_labels"} & set(columns))):
            problems.append(f"unknown label columns {unknown}; known: {LABEL_COLUMNS[:-1]}")
        if wrong := sorted(c for c in self.integers.values() if c in SERIES_LABEL_SCHEMA and _is_text(c)):
            problems.append(f"integer rules for text columns {wrong}")
        if wrong := sorted(c for c in self.strings.values() if c in SERIES_LABEL_SCHEMA and not _is_text(c)):
            problems.append(f"string rules for integer columns {wrong}")
        if not set(self.workload) <= set(WORKLOAD_COLUMNS) or any(not ns for ns in self.workload.values()):
            problems.append(f"workload rules name {WORKLOAD_COLUMNS} columns, each with at least one label")
        if repeated := sorted({n for n in names if names.count(n) > 1}):
            problems.append(f"labels used by two rules: {repeated}")
        if problems:
            raise ValueError("bad label rules: " + "; ".join(problems))

    def label_of(self, column: str) -> str | None:
        """The label an exporter writes ``column`` to (its preferred one), None if it has none."""
        for label, target in (*self.integers.items(), *self.strings.items()):
            if target == column:
                return label
        if column == "hostname":
            return self.hostname[0] if self.hostname else None
        return self.workload[column][0] if column in self.workload else None


def _is_text(column: str) -> bool:
    return SERIES_LABEL_SCHEMA[column] == pl.String()


@dataclass(frozen=True)
class Exporter:
    """An exporter's vocabulary: ``name`` (the config's ``[clusters.metrics] exporter``),
    a title for messages, its metrics (at most one per signal) and its labels."""

    name: str
    title: str
    metrics: tuple[ExporterMetric, ...]
    labels: SeriesLabels

    def __post_init__(self) -> None:
        signals = [metric.signal for metric in self.metrics]
        names = [metric.name for metric in self.metrics]
        problems = []
        if unknown := sorted(set(signals) - set(BY_NAME)):
            problems.append(f"unknown signals {unknown}; known: {list(BY_NAME)}")
        if twice := sorted({s for s in signals if signals.count(s) > 1}):
            problems.append(f"signals carried by two metrics: {twice}")
        if twice := sorted({n for n in names if names.count(n) > 1}):
            problems.append(f"metrics listed twice: {twice}")
        if bad := sorted(metric.name for metric in self.metrics if not metric.scale > 0):
            problems.append(f"scale must be positive (downsampling keeps max as max): {bad}")
        if problems:
            raise ValueError(f"exporter {self.name!r}: " + "; ".join(problems))

    @property
    def metric_signals(self) -> dict[str, str]:
        """Metric name -> signal, in declaration order."""
        return {metric.name: metric.signal for metric in self.metrics}

    @property
    def scales(self) -> dict[str, float]:
        """Signal -> unit factor, only where it is not 1."""
        return {metric.signal: metric.scale for metric in self.metrics if metric.scale != 1.0}

    def renamed(self, names: Mapping[str, str]) -> Exporter:
        """The same vocabulary with some metrics under a site's names (``metric_names``:
        exporter metric -> site metric); ``KeyError`` for a name the exporter lacks."""
        if unknown := sorted(set(names) - set(self.metric_signals)):
            raise KeyError(f"{self.title} has no metrics {unknown}; it has {list(self.metric_signals)}")
        if not names:
            return self
        metrics = tuple(replace(metric, name=names.get(metric.name, metric.name)) for metric in self.metrics)
        return replace(self, metrics=metrics)
