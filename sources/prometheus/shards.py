"""A day read from Prometheus in shards of GPUs (``sources.shards``).

Every read lists the series of each metric and day first (the census, ``census.py``). A read
in shards takes those listings for all metrics before it fetches anything (the fetch pool
runs them first anyway) and counts their series per device (UUID, else host), census host and
scrape job (:func:`tally`). The devices are packed into shards; each shard is read like a day
of its own, its queries narrowed by label matchers to its series (:class:`Selection`):
``UUID=~"<its UUIDs>"``, for series without a UUID ``UUID="",Hostname=~"<its hosts>"`` (one
selection per host label: a host's series may carry either spelling), for series with
neither every one of those labels empty. The censuses its requests are planned from are the
day's, cut to the shard's series: nothing is listed twice.

A day of no more than ``gpus_per_shard`` GPUs is one shard (``sources.shards.WHOLE``): read
with the plain selector and the censuses as listed, it sends exactly an unsharded read's
requests. A sharded read takes the Kubernetes label decision (``normalize_series``: are a
scrape job's ``pod`` labels the exporter's own?) over the whole day's census (``renamed_jobs``),
as an unsharded read takes it over the day's series.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import polars as pl

from contracts.exporters import Exporter
from sources.prometheus import LongSamples
from sources.prometheus.plan_types import Census, census_host
from sources.prometheus.promql import HOST_LABELS, host_shard_matchers, selector
from sources.series_labels import exported_labels
from sources.shards import ALL, DEVICE_LABELS, HOST, NONE, Shard, devices, pack

Partition = tuple[str, int, int]  # (metric, start ms, end ms), as fetch.Partition

TALLY_SCHEMA: dict[str, pl.DataType] = {
    "uuid": pl.String(),
    "host_label": pl.String(),  # the label that gave ``hostname``
    "hostname": pl.String(),
    "gpu": pl.String(),
    "gpu_i_id": pl.String(),
    "census_label": pl.String(),  # census_host: what the census counts the series under
    "census_host": pl.String(),
    "job": pl.String(),
    "exported": pl.Boolean(),  # carries an exported_<workload label> (series_labels.exported_labels)
    "n": pl.Int64(),
}


def tally(label_sets: Iterable[Mapping[str, str]], exporter: Exporter) -> pl.DataFrame:
    """One census's series counted per device, census host and scrape job (``TALLY_SCHEMA``; a
    combination may take several rows). Host and UUID as ``normalize_series`` takes them: the
    first of the exporter's host labels that is set, its UUID label (an empty value is no value).
    The label sets are counted by the labels read here first (series differ mostly in
    ``hpc_job``), then each distinct one is tallied."""
    rules = exporter.labels
    uuid, gpu, instance = (rules.label_of(column) or "" for column in ("uuid", "gpu", "gpu_i_id"))
    exported = exported_labels(rules)
    names = list(dict.fromkeys([uuid, gpu, instance, "job", *rules.hostname, *HOST_LABELS, *exported]))
    counts = Counter(tuple(map(labels.get, names)) for labels in label_sets)
    rows = []
    for key, n in counts.items():
        values = dict(zip(names, key, strict=True))
        host_label = next((name for name in rules.hostname if values[name]), None)
        device = (values[uuid] or None, host_label, values[host_label] if host_label else None)
        job = (values["job"], any(values[name] for name in exported))
        rows.append((*device, values[gpu], values[instance], *census_host(values), *job, n))
    return pl.DataFrame(rows, schema=TALLY_SCHEMA, orient="row")


@dataclass(frozen=True)
class Selection:
    """One selection of a shard's series: the read's selector narrowed by ``matchers``, and
    the censuses of the series it selects, per partition (None: the read probes its own)."""

    selector: str
    censuses: Mapping[Partition, Census] | None = None

    def census(self, metric: str, start_ms: int, end_ms: int) -> Census:
        if self.censuses is None:
            raise LookupError("this selection has no censuses: probe the server")
        return self.censuses[(metric, start_ms, end_ms)]


class ShardPlan:
    """The shards of one read and their selections, from the censuses of every partition
    (``censuses``) and their tallies."""

    def __init__(
        self,
        exporter: Exporter,
        base_selector: str,
        censuses: Mapping[Partition, Census],
        tallies: Mapping[Partition, pl.DataFrame],
        gpus_per_shard: int,
    ) -> None:
        self.base_selector, self.censuses, self.tallies = base_selector, censuses, tallies
        rules = exporter.labels
        self.host_labels = tuple(rules.hostname)
        self.labels = tuple(label for label in (rules.label_of("uuid"), *self.host_labels) if label)
        everything = pl.concat([pl.DataFrame(schema=TALLY_SCHEMA), *tallies.values()])
        self.shards = pack(devices(everything.select(DEVICE_LABELS)), gpus_per_shard)
        decided = everything.group_by("job").agg(pl.col("exported").any())
        self.renamed_jobs: dict[str | None, bool] = dict(decided.iter_rows())

    @property
    def sharded(self) -> bool:
        return len(self.shards) > 1

    def selections(self, shard: Shard) -> list[Selection]:
        """The selections that together read exactly ``shard``'s series."""
        if shard.kind == ALL:
            return [Selection(self.base_selector, self.censuses)]
        if shard.kind == NONE:
            wanted = [(None, pl.col("uuid").is_null() & pl.col("hostname").is_null())]
        elif shard.kind == HOST:
            mine = pl.col("uuid").is_null() & pl.col("hostname").is_in(shard.keys)
            wanted = [(label, mine & (pl.col("host_label") == label)) for label in self.host_labels]
        else:
            wanted = [(self.labels[0], pl.col("uuid").is_in(shard.keys))]
        selections = []
        for label, rows in wanted:
            censuses = {part: _census(part[0], found.filter(rows)) for part, found in self.tallies.items()}
            if any(census.total for census in censuses.values()):
                matchers = host_shard_matchers(label, shard.keys if label else (), self.labels)
                selections.append(Selection(selector("", self.base_selector, matchers), censuses))
        return selections


def _census(metric: str, rows: pl.DataFrame) -> Census:
    counts = rows.group_by("census_label", "census_host").agg(pl.col("n").sum())
    return Census.from_counts(metric, {(label, host): n for label, host, n in counts.iter_rows()})


def concat_long(parts: Sequence[LongSamples]) -> LongSamples:
    """Several reads' LongSamples as one: series ids of each part shifted past the ones before."""
    if len(parts) == 1:
        return parts[0]
    series, samples, offset = [], [], 0
    for part in parts:
        shift = pl.col("series_id") + pl.lit(offset, pl.UInt32)
        series.append(part.series.with_columns(shift))
        samples.append(part.samples.with_columns(shift))
        if part.series.height:
            offset += int(part.series.get_column("series_id").max()) + 1
    return LongSamples(pl.concat(series, how="diagonal"), pl.concat(samples))
