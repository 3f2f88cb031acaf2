"""The `quarantine_share` asset check: a day fails when a cluster quarantined too many samples.

Pure: it judges what the ingest asset already has (the screening counts of each cluster,
its ``metrics.max_quarantine_share``, the quarantined values per reason); it reads nothing
and writes nothing. The share is ``transforms.helpers.dcgm_quality.quarantine_share``: quarantined
values / non-null values delivered.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import polars as pl
from dagster import AssetCheckResult, AssetCheckSeverity, AssetKey

from transforms.helpers.dcgm_quality import quarantine_share

CHECK_NAME = "quarantine_share"
TOP_REASONS = 3
WORST_VALUE_SUFFIX = r" \((?:max|min) [^()]*\)$"


@dataclass(frozen=True)
class ClusterQuarantine:
    """One cluster's screening outcome for one day partition."""

    cluster: str
    day: str
    counts: Mapping[str, int]  # ScreenResult.counts
    max_share: float  # the cluster's limit (metrics.max_quarantine_share, slurm.max_quarantine_share)
    reasons: Mapping[str, int] = field(default_factory=dict)  # reason -> quarantined values
    unit: str = "sample values"  # what counts/input_values count
    limit_key: str = "metrics.max_quarantine_share"  # the config key of max_share
    examples: Mapping[str, str] = field(default_factory=dict)  # reason -> one example (location and value)

    @property
    def share(self) -> float:
        return quarantine_share(dict(self.counts))

    @property
    def exceeded(self) -> bool:
        return self.share > self.max_share

    def top_reasons(self, n: int = TOP_REASONS) -> list[tuple[str, int]]:
        """The reasons with the most quarantined values, biggest first (ties by name)."""
        return sorted(self.reasons.items(), key=lambda item: (-item[1], item[0]))[:n]


def values_by_reason(quarantine: pl.DataFrame) -> dict[str, int]:
    """Quarantined values per reason (QUARANTINE_SCHEMA frame: ``reason``, ``n_rows``).

    Out-of-range reasons carry each group's worst value ("sm_active above 1 (max 1.7)");
    that suffix is dropped here so one field's range problem on many GPUs is one reason.
    """
    if quarantine.is_empty():
        return {}
    reason = pl.col("reason").fill_null("no reason").str.replace(WORST_VALUE_SUFFIX, "")
    totals = quarantine.group_by(reason).agg(pl.col("n_rows").fill_null(1).sum()).sort("reason")
    return {str(reason): int(rows) for reason, rows in totals.iter_rows()}


def _describe(item: ClusterQuarantine) -> str:
    word = item.unit.split()[-1]

    def one(reason: str, rows: int) -> str:
        example = item.examples.get(reason)
        return f"{reason} ({rows:,} {word}" + (f", e.g. {example})" if example else ")")

    reasons = ", ".join(one(reason, rows) for reason, rows in item.top_reasons()) or "no reason recorded"
    return (
        f"cluster {item.cluster!r}, day {item.day}: {item.share:.4%} of {item.unit} quarantined "
        f"({item.counts.get('quarantined_values', 0):,} of {item.counts.get('input_values', 0):,}), "
        f"over {item.limit_key} {item.max_share:.4%}; biggest reasons: {reasons}"
    )


def quarantine_share_check(
    results: Sequence[ClusterQuarantine], asset_key: AssetKey | Sequence[str], check_name: str = CHECK_NAME
) -> AssetCheckResult:
    """Fail (severity ERROR; the check is blocking) when any cluster's share exceeds its limit."""
    failing = [item for item in results if item.exceeded]
    metadata = {
        "share_by_cluster": {item.cluster: round(item.share, 8) for item in results},
        "max_share_by_cluster": {item.cluster: item.max_share for item in results},
        "top_reasons_by_cluster": {item.cluster: dict(item.top_reasons()) for item in results},
        "failing_clusters": [item.cluster for item in failing],
    }
    description = "; ".join(_describe(item) for item in failing) if failing else None
    return AssetCheckResult(
        passed=not failing,
        asset_key=asset_key if isinstance(asset_key, AssetKey) else AssetKey(list(asset_key)),
        check_name=check_name,
        severity=AssetCheckSeverity.ERROR,
        description=description,
        metadata=metadata,
    )
