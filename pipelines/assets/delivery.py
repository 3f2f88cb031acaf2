"""The month's mail (``[delivery]``), after its review, department pages and exports: the same
step as ``cardhours deliver`` (pipelines/delivery.py). Without ``[delivery]`` it sends nothing
and says so; with it, what meta.deliveries records as sent is not sent again."""

from dagster import MaterializeResult, MetadataValue

from pipelines.delivery import deliver_month
from pipelines.step import Step
from pipelines.table_asset import table_asset
from pipelines.tables import (
    CHARGEBACK_EXPORT,
    DELIVERIES,
    FCT_GPU_HOURLY,
    FCT_JOB_FLAGS,
    FCT_JOB_USAGE,
    MART_CLUSTER_MONTHLY,
    MART_DEPARTMENT_MONTHLY,
    MART_USER_MONTHLY,
    REVIEW_DELIVERY,
    REVIEW_HTML,
)


@table_asset(
    REVIEW_DELIVERY,
    reads=[
        MART_CLUSTER_MONTHLY,
        MART_DEPARTMENT_MONTHLY,
        FCT_JOB_USAGE,
        FCT_GPU_HOURLY,
        FCT_JOB_FLAGS,
        MART_USER_MONTHLY,
        DELIVERIES,
    ],
    after=[REVIEW_HTML, CHARGEBACK_EXPORT],
    kinds=["email"],
    description="E-mails the month when [delivery] is configured: the review to operations, each department's "
    "page to its managers, the chargeback export and flagged job detail to finance. Each message once "
    "(meta.deliveries); `cardhours deliver --resend` sends again.",
)
def review_delivery(step: Step) -> MaterializeResult:
    config = step.config
    if config.delivery is None:
        step.log.info("no [delivery] section in the config: no mail sent")
        return step.done({"configured": False, "sent": 0})
    outcome = deliver_month(step.store.conn, config, step.month, str(step.cardhours.config_path))
    for line in outcome.lines():
        step.log.info(line)
    return step.done(
        {
            "configured": True,
            "sent": len(outcome.sent),
            "already_sent": len(outcome.skipped),
            "recipients": MetadataValue.json([f"{m.audience}: {m.recipient}" for m in outcome.sent]),
        }
    )
