"""The month's public marts copied to PostgreSQL for Grafana, Metabase and Superset, when the
config has a ``[publish]`` section (docs/publish.md); without one the asset publishes nothing."""

from dagster import MaterializeResult, MetadataValue

from pipelines.landing import utc_now
from pipelines.publish import PUBLIC_MARTS, publish
from pipelines.step import Step
from pipelines.table_asset import table_asset
from pipelines.tables import CHARGEBACK_EXPORT, PUBLISH_POSTGRES
from warehouse.publish.postgres import target


@table_asset(
    PUBLISH_POSTGRES,
    reads=list(PUBLIC_MARTS),
    after=[CHARGEBACK_EXPORT],  # which records the month's build finished: only finished builds are published
    kinds=["postgres"],
    description="The month's public marts ([publish] marts, default all) replaced in PostgreSQL in one "
    "transaction, with a row per table and month in cardhours_publications; nothing without [publish].",
)
def publish_postgres(step: Step) -> MaterializeResult:
    settings = step.config.publish
    if settings is None:
        return step.done({"published": False, "why": "the config has no [publish] section"})
    done = publish(step.store.conn, settings, step.month, utc_now(), progress=step.log.info)
    rows = {item.table: item.rows for item in done}
    return step.done({"published": True, "target": target(settings), "tables": MetadataValue.json(rows)},
                     rows=sum(rows.values()))  # fmt: skip
