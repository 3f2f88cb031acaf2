"""Shards of a day's samples: sets of GPUs read, screened and written together, so that a
worker holds one shard of a cluster's day at a time, never all of it (docs/storage.md,
"Memory per worker").

The unit is a *device*: a GPU known by its UUID (its MIG instances share it); series without
a UUID by their host (all of that host's UUID-less GPUs together); series with neither, one
device. Everything the day's screening and pivot relate happens inside one device: restart
duplicates are the rows of one UUID (``transforms.helpers.dcgm_quality.RESTART_KEY``), MIG
device fields move per UUID (per host and GPU without one), and the pivot merges series whose
labels are equal, UUID and host included. So a shard screened alone gives exactly the rows
the whole day screened at once gives.

Devices are packed in order (kind, then host, then key: a shard holds neighbouring hosts) into
shards of at most ``gpus_per_shard`` GPUs, a MIG instance counting as one (its rows are as many
as a whole GPU's); a device larger than that (a host of UUID-less GPUs, a GPU split in more
instances) is a shard of its own. A day of no more than ``gpus_per_shard`` GPUs is one shard, ``WHOLE``,
read as it always was. Pure: frames of device labels in, shards out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar

import polars as pl

UUID, HOST, NONE, ALL = "uuid", "host", "none", "all"  # device kinds (packed in this order); ALL: no filter
Frame = TypeVar("Frame", pl.DataFrame, pl.LazyFrame)
KINDS = (UUID, HOST, NONE)
DEVICE_LABELS = ["uuid", "hostname", "gpu", "gpu_i_id"]  # the label columns that name a device and its GPUs


@dataclass(frozen=True)
class Shard:
    """The devices of one shard: ``kind`` and their keys (UUIDs or hosts), with the GPUs they
    count and the range of host names their rows carry (``first_host``..``last_host``; with
    ``null_host`` when some rows have none)."""

    kind: str
    keys: tuple[str, ...] = ()
    gpus: int = 0
    first_host: str | None = None
    last_host: str | None = None
    null_host: bool = False

    def expr(self) -> pl.Expr:
        """Which rows (``uuid``, ``hostname`` columns) belong to the shard. The host range
        repeats what the keys imply, so that a Parquet reader skips row groups by their statistics."""
        if self.kind == ALL:
            return pl.lit(True)
        if self.kind == NONE:
            return pl.col("uuid").is_null() & pl.col("hostname").is_null()
        if self.kind == HOST:
            return pl.col("uuid").is_null() & pl.col("hostname").is_in(self.keys)
        mine = pl.col("uuid").is_in(self.keys)
        if self.first_host is None or self.null_host:
            return mine
        return mine & pl.col("hostname").is_between(pl.lit(self.first_host), pl.lit(self.last_host))

    def of(self, frame: Frame) -> Frame:
        """The rows of ``frame`` in this shard (all of them for ``WHOLE``)."""
        return frame if self.kind == ALL else frame.filter(self.expr())


WHOLE = Shard(ALL)


def devices(labels: pl.DataFrame | pl.LazyFrame) -> pl.DataFrame:
    """One row per device of rows with the ``DEVICE_LABELS`` columns: ``kind``, ``key``, the
    GPUs it counts (its distinct ``gpu``, ``gpu_i_id`` pairs: a MIG instance counts as a GPU,
    its rows are as many as a whole GPU's), the first and last host name of its rows and
    whether some have none. Sorted in packing order."""
    uuid, host = pl.col("uuid"), pl.col("hostname")
    kind = pl.when(uuid.is_not_null()).then(pl.lit(UUID)).when(host.is_not_null()).then(pl.lit(HOST))
    keyed = labels.lazy().with_columns(
        kind.otherwise(pl.lit(NONE)).alias("kind"), pl.coalesce(uuid, host, pl.lit("")).alias("key")
    )
    grouped = keyed.group_by("kind", "key").agg(
        pl.struct("gpu", "gpu_i_id").n_unique().alias("gpus"),
        host.min().alias("first_host"),
        host.max().alias("last_host"),
        host.is_null().any().alias("null_host"),
    )
    order = pl.col("kind").replace_strict({k: i for i, k in enumerate(KINDS)}, return_dtype=pl.UInt8)
    return grouped.sort(order, "first_host", "key", nulls_last=True).collect(engine="streaming")


def pack(found: pl.DataFrame, gpus_per_shard: int) -> list[Shard]:
    """Consecutive devices (``devices``' rows) in shards of at most ``gpus_per_shard`` GPUs
    (one device at least); ``[WHOLE]`` when all of them fit in one."""
    if gpus_per_shard < 1:
        raise ValueError(f"gpus_per_shard must be at least 1, got {gpus_per_shard}")
    if found.get_column("gpus").sum() <= gpus_per_shard:
        return [WHOLE]
    shards: list[Shard] = []
    batch: list[dict] = []
    size = 0
    for row in found.iter_rows(named=True):
        if batch and (batch[0]["kind"] != row["kind"] or size + row["gpus"] > gpus_per_shard):
            shards.append(_shard(batch))
            batch, size = [], 0
        batch.append(row)
        size += row["gpus"]
    if batch:
        shards.append(_shard(batch))
    return shards


def _shard(batch: list[dict]) -> Shard:
    hosts = [d[end] for d in batch for end in ("first_host", "last_host") if d[end] is not None]
    return Shard(
        batch[0]["kind"],
        tuple(d["key"] for d in batch) if batch[0]["kind"] != NONE else (),
        sum(d["gpus"] for d in batch),
        min(hosts) if hosts else None,
        max(hosts) if hosts else None,
        any(d["null_host"] for d in batch),
    )
