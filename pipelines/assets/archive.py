"""``<reports dir>/index.html``, rewritten after a month's review, department pages and exports."""

from dagster import MaterializeResult, MetadataValue

from pipelines.step import Step
from pipelines.table_asset import table_asset
from pipelines.tables import ARCHIVE_INDEX, CHARGEBACK_EXPORT, FCT_JOB_FLAGS, REVIEW_HTML
from reports.archive_index import scan_archive, write_index


@table_asset(
    ARCHIVE_INDEX,
    after=[REVIEW_HTML, CHARGEBACK_EXPORT, FCT_JOB_FLAGS],
    kinds=["html"],
    description="<reports dir>/index.html: every month of the reports folder, newest first, with its review, "
    "department pages and exports (read from the folder) and their sizes.",
)
def archive_index(step: Step) -> MaterializeResult:
    config = step.config
    path = write_index(config.reports.dir, config.reports.templates_dir)
    months = scan_archive(config.reports.dir)
    step.log.info(f"index of {len(months)} months written to {path}")
    return step.done({"path": MetadataValue.path(str(path)), "months": len(months)})
