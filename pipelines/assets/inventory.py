"""intermediate.int_gpu_inventory_observed: the GPUs and MIG instances the DCGM hourly rollup
reported each hour of the month (``transforms/intermediate/int_gpu_inventory_observed.py``), and
where DCGM did not report a node, the cards its Kubernetes node advertised, else the cards its
Slurm node's GRES declared (``transforms/intermediate/inventory_counts.py``).

The marts' capacity is the config's inventory with the cards observed otherwise replaced, hour
by hour (``capacity_inventory``, warehouse/books/inventory.py); each difference is logged here
with what to change in the config, and the review lists them.
"""

import polars as pl
from dagster import MetadataValue

from contracts.sources import OBSERVED_BY_DCGM
from contracts.sources import OBSERVED_BY_KUBE as KUBE
from contracts.sources import OBSERVED_BY_SLURM as SLURM
from pipelines.step import Step
from pipelines.table_asset import table_asset
from pipelines.tables import (
    INT_GPU_INVENTORY_OBSERVED,
    MONTH_LANDED,
    STG_DCGM__GPU_HOURLY,
    STG_KUBE__NODE_CAPACITY,
    STG_SLURM__NODE_CAPACITY,
)
from transforms.intermediate.int_gpu_inventory_observed import (
    CARD,
    OBSERVED_SQL,
    SCHEMA,
    difference_advice,
    inventory_differences,
)
from transforms.intermediate.inventory_cards import cards_that_may_differ, instance_counts
from transforms.intermediate.inventory_counts import counts_observed
from transforms.intermediate.inventory_models import model_differences, model_hours


@table_asset(
    INT_GPU_INVENTORY_OBSERVED,
    reads=[STG_DCGM__GPU_HOURLY, STG_KUBE__NODE_CAPACITY, STG_SLURM__NODE_CAPACITY],
    after=[MONTH_LANDED],
    kinds=["polars"],
    description="Per GPU or MIG instance and hour: what DCGM reported (uuid, model, MIG profile), else what the "
    "Kubernetes node advertised, else what the Slurm node's GRES declared; capacity "
    "takes a card's observed layout where it differs from the config's; a model other than the declared one "
    "is listed.",
)
def int_gpu_inventory_observed_asset(step: Step):
    params = [OBSERVED_BY_DCGM, step.start.date(), step.end.date(), step.start, step.end]
    dcgm = step.sql(OBSERVED_SQL, params).cast(SCHEMA)
    declared = step.config.inventory_frame()
    weight = step.config.rates.mig_weight
    kube_counts = step.read(STG_KUBE__NODE_CAPACITY, with_period=False)
    kube = counts_observed(declared, dcgm, kube_counts, step.start, step.end, weight, SCHEMA, KUBE)
    slurm_counts = step.read(STG_SLURM__NODE_CAPACITY, with_period=False)
    seen = pl.concat([dcgm, kube])
    slurm = counts_observed(declared, seen, slurm_counts, step.start, step.end, weight, SCHEMA, SLURM)
    observed = pl.concat([seen, slurm]).sort("cluster", "hostname", "gpu", "hour", "gpu_i_id", nulls_last=False)
    rows = step.write(observed)
    cards = cards_that_may_differ(declared, instance_counts(observed))
    layouts = inventory_differences(declared, observed.join(cards, on=CARD, how="semi"))
    differences = pl.concat([layouts, model_differences(declared, model_hours(observed))])
    advice = [difference_advice(row) for row in differences.iter_rows(named=True)]
    for line in advice[:20]:
        step.log.warning(line)
    return step.done(
        {
            "differences": len(advice),
            "kube_rows": kube.height,
            "slurm_rows": slurm.height,
            "advice": MetadataValue.json(advice[:50]),
        },
        rows=rows,
    )
