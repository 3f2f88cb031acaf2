"""``reports/user_notices``: the month's notices to users about their flagged jobs, when ``[notices]
enabled`` (docs/reports.md, "Notices to users"). Each notice goes through ``[smtp]`` and is recorded
in meta.user_notices; a rerun sends only what was not sent (the ledger), so re-sending a month is
never the accident of a rerun. Disabled or absent ``[notices]``: nothing is read or sent."""

import os

from dagster import Failure, MaterializeResult

from pipelines.landing import utc_now
from pipelines.step import Step
from pipelines.table_asset import table_asset
from pipelines.tables import FCT_JOB_FLAGS, FCT_JOB_USAGE, USER_NOTICES
from reports.user_notice_mail import send_notices
from reports.user_notice_run import prepare, recorder


@table_asset(
    USER_NOTICES,
    reads=[FCT_JOB_FLAGS, FCT_JOB_USAGE],
    kinds=["email"],
    description="Mail each user with flagged jobs in the month what they wasted, why and what to do "
    "([notices], opt-in), at most once per period; sent notices are recorded in meta.user_notices.",
)
def user_notices(step: Step) -> MaterializeResult:
    notices, smtp = step.config.notices, step.config.smtp
    if notices is None or not notices.enabled or smtp is None:
        step.log.info("user notices are off ([notices] enabled = false or absent): nothing sent")
        return step.done({"enabled": False, "sent": 0})
    conn = step.store.conn
    prepared = prepare(conn, notices, smtp.from_address, step.month, utc_now())
    failures = send_notices(smtp, os.environ, prepared.messages, recorder(conn, step.month, utc_now), step.log.info)
    sent = len(prepared.messages) - len(failures)
    if failures:
        raise Failure(f"{len(failures)} of {len(prepared.messages)} user notice(s) not sent ({sent} sent and "
                      "recorded; a rerun sends the others):\n" + "\n".join(failures))  # fmt: skip
    skips = {s.skip for s in prepared.skipped}
    counts = {f"skipped_{k}": sum(s.skip == k for s in prepared.skipped) for k in sorted(skips)}
    return step.done({"enabled": True, "sent": sent, **counts})
