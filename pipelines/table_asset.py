"""The asset pattern: an asset states its table, what it reads, the transform call and its
checks; the period, the warehouse, the partition write, lineage and the usual metadata are here.

    @table_asset(MART_CLUSTER_MONTHLY, reads=[FCT_JOB_USAGE], kinds=["polars"], description="...")
    def mart_cluster_monthly_asset(step: Step) -> Built:
        capacity = capacity_gpu_hours(step.config.inventory_frame(), step.start, step.end)
        clusters = mart_cluster_monthly(step.read(FCT_JOB_USAGE), capacity, step.month)
        return Built(clusters, metadata={"utilization": ...})

``table_asset`` derives the asset's key, partitions and group from the table (pipelines/tables.py),
its deps from ``reads`` (each read table's writer) and ``after`` (assets it must follow without
reading them), and adds the storage kind. The body returns ``Built`` (or a bare frame): the
pattern writes it as the run's partition of the table (adding the period column when the
transform leaves it out) and reports ``rows`` and the period (``day`` or ``month``) first in
the metadata, then the body's, with the body's check results. A body that writes several
tables itself (the landings) returns its own ``MaterializeResult``.

No ``from __future__ import annotations`` here: Dagster reads the compute function's parameter types.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from dagster import AssetCheckResult, AssetCheckSpec, AssetExecutionContext, AssetKey, MaterializeResult, asset
from dagster import Config as RunConfig

from pipelines.resources import CardhoursResource
from pipelines.step import Step
from pipelines.store import Store
from pipelines.tables import Node, Table
from warehouse.partitions import Frame

__all__ = ["Built", "Check", "Step", "table_asset"]


@dataclass(frozen=True)
class Check:
    """An asset check the asset reports (blocking: a failure stops its downstream assets)."""

    name: str
    blocking: bool = True
    description: str | None = None


@dataclass
class Built:
    """What a body built: its table's partition, metadata beyond rows and period, check results."""

    frame: Frame
    metadata: dict = field(default_factory=dict)
    checks: Sequence[AssetCheckResult] = ()
    partition: dict | None = None  # the partition to replace, when not the run's period


Body = Callable[[Step], "Built | Frame | MaterializeResult"]


def lineage(target: Node, reads: Sequence[Table], after: Sequence[Node]) -> list[AssetKey]:
    """The assets ``target`` depends on: the writers of what it reads, then ``after``."""
    keys: list[AssetKey] = []
    for read in [*reads, *after]:
        node = read.asset if isinstance(read, Table) else read
        if node is not None and node.key != target.key and node.key not in keys:
            keys.append(node.key)
    return keys


def _finish(step: Step, out: "Built | Frame | MaterializeResult") -> MaterializeResult:
    if isinstance(out, MaterializeResult):
        return out
    built = out if isinstance(out, Built) else Built(out)
    rows = step.write(built.frame, partition=built.partition)
    return step.done(built.metadata, built.checks, rows=rows)


def table_asset(
    target: Node,
    *,
    description: str,
    reads: Sequence[Table] = (),
    after: Sequence[Node] = (),
    kinds: Sequence[str] = (),
    checks: Sequence[Check] = (),
    run_config: type[RunConfig] | None = None,
):
    """Make ``body(step)`` the asset of ``target`` (a Table, or a Node writing files or
    bookkeeping). ``run_config``: a Dagster Config class the run may set (``step.run_config``)."""
    storage = {Store.kind(target)} if isinstance(target, Table) else set()

    def decorate(body: Body):
        def run(context: AssetExecutionContext, cardhours: CardhoursResource, config=None) -> MaterializeResult:
            step = Step(context, cardhours, target, reads, config)
            try:
                return _finish(step, body(step))
            finally:
                step.close()

        if run_config is None:

            def compute(context: AssetExecutionContext, cardhours: CardhoursResource) -> MaterializeResult:
                return run(context, cardhours)

        else:

            def compute(context: AssetExecutionContext, config, cardhours: CardhoursResource) -> MaterializeResult:
                return run(context, cardhours, config)

            compute.__annotations__["config"] = run_config
        compute.__doc__ = body.__doc__
        return asset(
            key=target.key,
            partitions_def=target.partitions_def,
            group_name=target.group,
            kinds={*storage, *kinds},
            deps=lineage(target, reads, after),
            check_specs=[
                AssetCheckSpec(c.name, asset=target.key, blocking=c.blocking, description=c.description) for c in checks
            ],
            description=description,
        )(compute)

    return decorate
