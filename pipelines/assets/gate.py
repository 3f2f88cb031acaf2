"""The monthly job's first step: refuse to build a month over failed or missing days.

``meta/month_landed`` (monthly) reads meta.landings and fails, naming the clusters, sources and
days, unless every day of the month landed ('ok', or a coverage 'gap') for every configured cluster
(warehouse/books/landings.py), or the run was given a reason to build over the gaps (run config
``accept_gaps``; ``cardhours run --accept-gaps``). When it passes it records the build's start
and the newest landing it builds on in meta.monthly_builds; the chargeback export marks the
build finished. Every monthly asset that reads daily data follows it (``after=[MONTH_LANDED]``).
"""

from dagster import Config as RunConfig
from dagster import Failure, MaterializeResult, MetadataValue

from pipelines.landing import utc_now
from pipelines.step import Step
from pipelines.table_asset import table_asset
from pipelines.tables import MONTH_LANDED
from warehouse.books.landings import expected_sources, landing_gaps
from warehouse.landings import month_landings, start_build

GATE_KEY = MONTH_LANDED.key
GATE_STEP = "meta__month_landed"


class GateConfig(RunConfig):
    accept_gaps: str = ""  # a reason: build over failed or missing days anyway (stored with the build)


@table_asset(
    MONTH_LANDED,
    kinds=["duckdb"],
    run_config=GateConfig,
    description="Every day of the month landed for every cluster (meta.landings), or the run accepts "
    "the gaps with a reason; records the build's start in meta.monthly_builds.",
)
def month_landed(step: Step) -> MaterializeResult:
    month, reason = step.month, step.run_config.accept_gaps.strip()
    landings = month_landings(step.store.conn, step.start.date(), step.end.date())
    gaps = landing_gaps(landings, expected_sources(step.config), step.start.date(), step.end.date())
    if gaps and not reason:
        raise Failure(
            description=(
                f"{month:%Y-%m} is not built: not every day landed.\n" + "\n".join(gaps) + "\n"
                f"Land those days (the daily_ingest job for each, or cardhours run --month {month:%Y-%m}), "
                'or build over them with a reason (cardhours run --accept-gaps "...", '
                "or run config accept_gaps)."
            ),
            metadata={"gaps": MetadataValue.json(gaps)},
        )
    landed_through = landings.get_column("landed_at").max() if landings.height else None
    start_build(step.store.conn, month, utc_now(), landed_through, reason or None)
    if gaps:
        step.log.warning(f"building {month:%Y-%m} over gaps ({reason}): " + "; ".join(gaps))
    return step.done(
        {
            "landings": landings.height,
            "landed_through": str(landed_through),
            "gaps": MetadataValue.json(gaps),
            "accepted_gaps": reason,
        }
    )
