"""The cards a node's GPU counts stand for, in the hours DCGM did not report the node.

DCGM names cards (host, GPU index, MIG instance); a Kubernetes node (``staging.stg_kube__node_capacity``,
kube-state-metrics) or a Slurm node's GRES (``staging.stg_slurm__node_capacity``, scontrol) only
give counts: whole GPUs and MIG instances per profile. Priority, per cluster, host and hour:

1. DCGM reported any card of the host in the hour: DCGM's rows alone, card by card (the rules of
   ``int_gpu_inventory_observed``); the node's counts add nothing that hour (counts cannot say
   which card a silent one is, and a card DCGM reported is never counted again).
2. Otherwise, where the Kubernetes node advertised GPUs: its counts are placed on cards
   (``place``) and these rows are the observation of the hour (``source`` = ``kube``), judged by
   the same rules.
3. Otherwise, where the Slurm node's GRES counts GPUs: the same, with ``source`` = ``slurm``.

``place``: the host's declared cards, in GPU order, keep their declared layout while the counts
still hold it (a node advertising what the config declares gives the config's cards exactly);
the counts left go first as whole GPUs, then as MIG instances on GPUs (the same layout on each
of the fewest GPUs that hold them when the counts divide evenly, as the MIG manager applies one
layout per node; else first fit by decreasing weight, each GPU at most one whole), onto the
declared cards not kept and then onto new GPU indices after the host's last. A card kept or
placed is whole or MIG, never both. Placed MIG instances are numbered 0, 1, ... on their card
(the driver's ids are not advertised). Counts below the declared ones remove nothing: the cards
left over keep the config's rows, as a card DCGM does not report does.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from datetime import datetime

import polars as pl

Layout = tuple[tuple[str | None, int], ...]  # (profile or None for whole, count), sorted
Card = list[tuple[int | None, str | None]]  # (gpu_i_id, profile) of one card; [(None, None)]: whole


def _fits(need: Counter, left: Counter) -> bool:
    return all(left[key] >= n for key, n in need.items())


def _uniform(counts: Counter, weight: Callable[[str], float]) -> list[list[str]] | None:
    """The counts split evenly over the fewest GPUs that hold them (the same layout on each GPU,
    as the GPU operator's MIG manager applies one layout to a node), or None when none does."""
    total = sum(weight(profile) * n for profile, n in counts.items())
    common = math.gcd(*counts.values())
    for gpus in range(max(1, math.ceil(total - 1e-9)), common + 1):
        if common % gpus == 0:
            card = sorted(profile for profile, n in counts.items() for _ in range(n // gpus))
            return [card] * gpus
    return None


def _pack(counts: Counter, weight: Callable[[str], float]) -> list[list[str]]:
    """MIG instances onto GPUs: evenly when the counts allow (``_uniform``), else first fit by
    decreasing weight, at most one GPU's worth each."""
    if not counts:
        return []
    uniform = _uniform(counts, weight)
    if uniform is not None:
        return uniform
    profiles = [profile for profile, n in sorted(counts.items()) for _ in range(n)]
    bins: list[tuple[float, list[str]]] = []
    for profile in sorted(profiles, key=lambda p: (-weight(p), p)):
        for i, (used, members) in enumerate(bins):
            if used + weight(profile) <= 1 + 1e-9:
                bins[i] = (used + weight(profile), [*members, profile])
                break
        else:
            bins.append((weight(profile), [profile]))
    return [members for _, members in bins]


def place(declared: dict[int, Card], layout: Layout, weight: Callable[[str], float]) -> dict[int, Card]:
    """GPU index -> its instances, for a node advertising ``layout`` (module docstring)."""
    left = Counter({profile: n for profile, n in layout})
    cards: dict[int, Card] = {}
    for gpu, card in sorted(declared.items()):
        need = Counter(profile for _, profile in card)
        if _fits(need, left):
            cards[gpu] = card
            left -= need
    free = [gpu for gpu in sorted(declared) if gpu not in cards]
    after = max([*declared, -1]) + 1

    def next_gpu() -> int:
        nonlocal after
        if free:
            return free.pop(0)
        after += 1
        return after - 1

    for _ in range(left.pop(None, 0)):
        cards[next_gpu()] = [(None, None)]
    for members in _pack(+left, weight):
        cards[next_gpu()] = [(i, profile) for i, profile in enumerate(sorted(members))]
    return cards


def _declared_cards(declared: pl.DataFrame) -> dict[tuple[str, str], dict[int, Card]]:
    out: dict[tuple[str, str], dict[int, Card]] = {}
    for row in declared.sort("cluster", "hostname", "gpu", "gpu_i_id", nulls_last=False).iter_rows(named=True):
        host = out.setdefault((row["cluster"], row["hostname"]), {})
        host.setdefault(row["gpu"], []).append((row["gpu_i_id"], row["gpu_i_profile"]))
    return out


def counts_observed(
    declared: pl.DataFrame,
    seen: pl.DataFrame,
    capacity: pl.DataFrame,
    start: datetime,
    end: datetime,
    weight: Callable[[str], float],
    schema: dict[str, pl.DataType],
    source: str,
) -> pl.DataFrame:
    """Rows in ``schema`` (int_gpu_inventory_observed's; ``source`` as given, no uuid, model or
    sample count) for the host-hours of ``[start, end)`` the node's counts (``capacity``, in
    stg_kube__node_capacity's columns) name GPUs and ``seen`` (the rows of the sources before it) has none."""
    hours = capacity.filter(pl.col("hour").is_between(start, end, closed="left"))
    hours = hours.join(
        seen.select("cluster", "hostname", "hour").unique(), on=["cluster", "hostname", "hour"], how="anti"
    )
    if hours.is_empty():
        return pl.DataFrame(schema=schema)
    layouts = hours.group_by("cluster", "hostname", "hour").agg(
        pl.struct("gpu_i_profile", "n_advertised").sort_by(pl.col("gpu_i_profile").fill_null("")).alias("_layout")
    )
    cards = _declared_cards(declared)
    placed: dict[tuple, list[tuple]] = {}
    rows = []
    for cluster, host, hour, layout in layouts.iter_rows():
        key = (cluster, host, tuple((item["gpu_i_profile"], item["n_advertised"]) for item in layout))
        if key not in placed:
            on_cards = place(cards.get((cluster, host), {}), key[2], weight)
            placed[key] = [(gpu, gi_id, profile) for gpu, card in sorted(on_cards.items()) for gi_id, profile in card]
        rows += [(cluster, host, gpu, gi_id, profile, hour) for gpu, gi_id, profile in placed[key]]
    frame = pl.DataFrame(
        rows,
        schema={
            "cluster": pl.String,
            "hostname": pl.String,
            "gpu": pl.Int16,
            "gpu_i_id": pl.Int16,
            "gpu_i_profile": pl.String,
            "hour": pl.Datetime("us"),
        },
        orient="row",
    )
    return (
        frame.with_columns(source=pl.lit(source))
        .with_columns(pl.lit(None).alias(name) for name in schema if name not in frame.columns and name != "source")
        .select(list(schema))
        .cast(schema)
        .sort("cluster", "hostname", "gpu", "hour", "gpu_i_id", nulls_last=False)
    )
