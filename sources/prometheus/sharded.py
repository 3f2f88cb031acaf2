"""A day read from Prometheus in shards of GPUs (``shards``): every partition's census first,
on as many connections as the read's requests, then one read per shard."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from typing import TYPE_CHECKING

from sources.prometheus import LongSamples
from sources.prometheus.gc_pause import gc_paused
from sources.prometheus.report import ReadReport
from sources.prometheus.shards import Partition, ShardPlan
from sources.shards import Shard

if TYPE_CHECKING:
    from sources.prometheus.source import PrometheusMetricsSource


def plan_shards(source: PrometheusMetricsSource, partitions: Sequence[Partition], gpus_per_shard: int) -> ShardPlan:
    """The censuses of ``partitions`` (listed in parallel) and the shards they give."""
    with gc_paused(), ThreadPoolExecutor(source.parallel_requests, thread_name_prefix="prometheus") as pool:
        surveys = list(pool.map(lambda part: source.survey(*part), partitions))
    censuses = {part: census for part, (census, _) in zip(partitions, surveys, strict=True)}
    tallies = {part: found for part, (_, found) in zip(partitions, surveys, strict=True) if found is not None}
    return ShardPlan(source.exporter, source.config.selector, censuses, tallies, gpus_per_shard)


def read_in_shards(
    source: PrometheusMetricsSource,
    start: datetime,
    end: datetime,
    partitions: Sequence[Partition],
    gpus_per_shard: int,
) -> Iterator[tuple[LongSamples, dict[str | None, bool] | None]]:
    """Each shard's LongSamples, read when the caller asks for it, with the Kubernetes label
    decision taken over the whole day (None: one shard, which takes it over its own series).
    Once all are read, ``source.last_report`` tells of all of them."""
    plan = plan_shards(source, partitions, gpus_per_shard)
    reports: list[ReadReport] = []

    def read(shard: Shard) -> LongSamples:  # no local here holds a shard once the caller has it
        long = source.read_long(start, end, plan.selections(shard))
        if source.last_report is not None:
            reports.append(source.last_report)
        return long

    for shard in plan.shards:
        yield read(shard), plan.renamed_jobs if plan.sharded else None
    source.last_report = ReadReport.total(reports, list(source.fields), list(plan.censuses.values()), len(plan.shards))
