"""The table registry (pipelines/tables.py) against the code location: every asset is declared
there once, jobs select by grain, lineage comes from the reads, blocking checks still block."""

from __future__ import annotations

from dagster import AssetKey

from pipelines.definitions import ASSETS, build_definitions
from pipelines.table_asset import lineage
from pipelines.tables import (
    MART_KUBE_QUEUE_MONTHLY,
    MONTH_LANDED,
    NODES,
    RAW_KUBE_QUEUE_SAMPLES,
    RAW_QUARANTINE,
    STG_SLURM__JOBS,
    Table,
)


def _keys(*paths: str) -> list[AssetKey]:
    return [AssetKey.from_user_string(path) for path in paths]


def _by_key() -> dict[AssetKey, object]:
    return {key: definition for definition in ASSETS for key in definition.keys}


def test_every_asset_is_a_registry_node_and_every_node_an_asset() -> None:
    declared = {node.key for node in NODES if not isinstance(node, Table) or node.group is not None}
    assert set(_by_key()) == declared
    assert len(declared) == 38


def test_the_jobs_select_the_assets_of_their_grain() -> None:
    definitions = build_definitions("unused.toml")
    daily = definitions.resolve_job_def("daily_ingest").graph.node_names()
    assert sorted(daily) == [
        "raw__dcgm_samples",
        "raw__kube_series",
        "raw__slurm_node_snapshots",
        "raw__slurm_sacct",
        "staging__stg_dcgm__field_presence",
        "staging__stg_dcgm__gpu_dropout",
        "staging__stg_dcgm__gpu_hour_sums",
        "staging__stg_dcgm__gpu_hourly",
        "staging__stg_dcgm__gpu_minutely",
        "staging__stg_dcgm__gpu_xid",
        "staging__stg_kube__node_capacity",
        "staging__stg_kube__node_downtime",
        "staging__stg_slurm__downtime",
        "staging__stg_slurm__node_capacity",
    ]
    monthly = definitions.resolve_job_def("monthly_review").graph.node_names()
    assert len(monthly) == 24 and "meta__month_landed" in monthly and "reports__review_html" in monthly
    assert "reports__archive_index" in monthly and "reports__review_delivery" in monthly
    assert "publish__postgres" in monthly and "reports__user_notices" in monthly


def test_lineage_names_the_writer_of_each_read_table() -> None:
    # raw.kube_queue_samples lands with raw/kube_series; raw.quarantine has many writers: no edge
    assert lineage(MART_KUBE_QUEUE_MONTHLY, [RAW_KUBE_QUEUE_SAMPLES, RAW_QUARANTINE], [MONTH_LANDED]) == _keys(
        "raw/kube_series", "meta/month_landed"
    )
    assert lineage(STG_SLURM__JOBS, [STG_SLURM__JOBS], []) == []


def test_checks_keep_their_names_and_blocking() -> None:
    assets = _by_key()
    specs = {
        key.to_user_string(): sorted((spec.name, spec.blocking) for spec in assets[key].check_specs)
        for key in _keys("raw/dcgm_samples", "staging/stg_slurm__jobs", "marts/mart_department_monthly")
    }
    assert specs == {
        "raw/dcgm_samples": [("gx_raw_dcgm_samples", True), ("quarantine_share", True)],
        "staging/stg_slurm__jobs": [("gx_stg_slurm__jobs", True), ("unknown_slurm_states", False)],
        "marts/mart_department_monthly": [("capacity_balance", True), ("matches_job_usage", True)],
    }
