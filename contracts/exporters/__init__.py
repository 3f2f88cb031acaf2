"""The metrics exporters cardhours reads, by the name a cluster's config gives them.

``[clusters.metrics] exporter`` names one of ``EXPORTERS`` (default ``"dcgm"``). Adding an
exporter is one mapping module beside ``dcgm.py`` and its line here (docs/design.md,
"How to add a metrics source").
"""

from __future__ import annotations

from contracts.exporters.dcgm import DCGM
from contracts.exporters.mapping import Exporter, ExporterMetric, SeriesLabels

__all__ = ["DEFAULT_EXPORTER", "EXPORTERS", "Exporter", "ExporterMetric", "SeriesLabels", "get_exporter"]

EXPORTERS: dict[str, Exporter] = {exporter.name: exporter for exporter in (DCGM,)}
DEFAULT_EXPORTER = DCGM.name


def get_exporter(name: str) -> Exporter:
    """The exporter called ``name``; ``KeyError`` naming the known ones otherwise."""
    try:
        return EXPORTERS[name]
    except KeyError:
        raise KeyError(f"unknown metrics exporter {name!r}; known: {sorted(EXPORTERS)}") from None
