"""Monthly outputs written under the reports directory."""


from dagster import AssetDep, AssetExecutionContext, MaterializeResult, MetadataValue, asset

from pipelines.assets.marts import CLUSTER_KEY, DEPARTMENT_KEY, JOB_USAGE_KEY
from pipelines.partitions import monthly_partitions, naive_window
from pipelines.resources import CardhoursResource
from reports.review import render_review
from reports.write import write_review
from warehouse import read_frame

REVIEW_KEY = ["reports", "review_html"]


@asset(
    key=REVIEW_KEY,
    partitions_def=monthly_partitions,
    group_name="reports",
    kinds={"html", "plotly"},
    deps=[AssetDep(JOB_USAGE_KEY), AssetDep(DEPARTMENT_KEY), AssetDep(CLUSTER_KEY)],
    description="YYYY-MM/review.html: the monthly utilization review (self-contained, works offline).",
)
def review_html(context: AssetExecutionContext, cardhours: CardhoursResource) -> MaterializeResult:
    start, _ = naive_window(context.partition_time_window)
    month = start.date()
    with cardhours.warehouse() as conn:
        clusters = read_frame(conn, "SELECT * FROM marts.mart_cluster_monthly WHERE month = ? ORDER BY cluster", [month])
        departments = read_frame(conn, "SELECT * FROM marts.mart_department_monthly WHERE month = ? ORDER BY cluster, department", [month])
        jobs = read_frame(conn, "SELECT * FROM marts.fct_job_usage WHERE month = ? ORDER BY cluster, job_id", [month])
    html = render_review(month=month, generated_from=str(cardhours.config_path), clusters=clusters, departments=departments, jobs=jobs)
    path = write_review(html, cardhours.config.reports.dir, month.strftime("%Y-%m"))
    context.log.info(f"review written to {path}")
    return MaterializeResult(metadata={"path": MetadataValue.path(str(path)), "bytes": len(html.encode())})
