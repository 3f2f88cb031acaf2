"""Ranges of hosts: the shards a landed day of DCGM samples is rolled up in.

Every DCGM rollup groups by host (then GPU, instance, job...) and the energy counter's
increments run per host, GPU and instance, so the rows of a range of hosts roll up exactly as
they do inside the whole day; and since each rollup sorts by host first, range after range
gives the same rows in the same order. A range holds neighbouring hosts of at most
``gpus_per_shard`` GPUs (one host at least; a host's GPUs are its distinct ``gpu``, ``gpu_i_id``
pairs: a MIG instance counts as one); rows without a host are a range of their own, first
(nulls sort first). Pure: the day's (``hostname``, ``gpu``, ``gpu_i_id``) triples in, ranges out.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from sources.shards import ALL, NONE, Shard, devices, pack


@dataclass(frozen=True)
class HostRange:
    """Rows whose ``hostname`` is ``first``..``last`` (inclusive, in byte order); both None:
    rows without a host; ``whole``: every row."""

    first: str | None = None
    last: str | None = None
    whole: bool = False

    @property
    def where(self) -> str:
        """A SQL condition on ``hostname`` (``?`` bound from ``params``; empty: every row)."""
        if self.whole:
            return ""
        return "hostname IS NULL" if self.first is None else "hostname BETWEEN ? AND ?"

    @property
    def params(self) -> list[object]:
        return [] if self.whole or self.first is None else [self.first, self.last]

    def sql(self, prefix: str = " AND ") -> str:
        """``where`` after ``prefix``, or nothing for every row."""
        return prefix + self.where if self.where else ""


EVERY_HOST = HostRange(whole=True)


def host_ranges(instances: pl.DataFrame, gpus_per_shard: int) -> list[HostRange]:
    """The ranges of the day's (``hostname``, ``gpu``, ``gpu_i_id``) instances; ``[EVERY_HOST]``
    when they fit in one."""
    hosts = devices(instances.select(pl.lit(None, pl.String).alias("uuid"), "hostname", "gpu", "gpu_i_id"))
    shards = pack(hosts, gpus_per_shard)
    return [_range(shard) for shard in sorted(shards, key=lambda shard: shard.kind != NONE)]


def _range(shard: Shard) -> HostRange:
    if shard.kind == ALL:
        return EVERY_HOST
    return HostRange() if shard.kind == NONE else HostRange(shard.first_host, shard.last_host)
