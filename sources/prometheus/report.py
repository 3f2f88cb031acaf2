"""What one read from Prometheus found and did (``ReadReport``), for a run's metadata."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sources.prometheus.fetch import FetchStats
from sources.prometheus.plan import Census


@dataclass(frozen=True)
class ReadReport:
    """What one read found and did."""

    fields_present: tuple[str, ...]  # the exporter's metrics (by its own names) that returned series
    censuses: tuple[Census, ...]
    fetch: FetchStats
    n_series: int
    n_samples: int
    gpu_shards: int = 1  # the read's shards of GPUs (sources.prometheus.shards)

    def summary(self) -> dict[str, object]:
        """The read in numbers (JSON-safe), for a run's metadata."""
        fetch = self.fetch
        return {
            "fields_present": list(self.fields_present),
            "series": self.n_series,
            "samples": self.n_samples,
            "requests_planned": fetch.planned,
            "requests_answered": fetch.answered,
            "requests_refused_and_split": fetch.refused,
            "deepest_split": fetch.max_splits,
            "host_shards_answered": len(fetch.shards),
            "censuses_listed_by_host": sum(census.listed_in > 0 for census in self.censuses),
            "response_mib": round(fetch.n_bytes / 2**20, 1),
            "fetch_seconds": round(fetch.seconds, 3),
            "decoder": fetch.decoder,
            "decoder_fallbacks": fetch.fallbacks,
            "gpu_shards": self.gpu_shards,
        }

    @classmethod
    def total(
        cls, parts: Sequence[ReadReport], fields: Sequence[str], censuses: Sequence[Census], gpu_shards: int
    ) -> ReadReport:
        """The reads of a day's shards as one (``fields``: the exporter's metrics, in order;
        ``censuses``: the day's, as listed once for all shards)."""
        present = {field for part in parts for field in part.fields_present}
        return cls(
            fields_present=tuple(field for field in fields if field in present),
            censuses=tuple(censuses),
            fetch=FetchStats.total([part.fetch for part in parts]),
            n_series=sum(part.n_series for part in parts),
            n_samples=sum(part.n_samples for part in parts),
            gpu_shards=gpu_shards,
        )
