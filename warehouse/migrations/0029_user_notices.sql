-- 0029: meta.user_notices: the notices cardhours sent users about their flagged jobs
-- (cardhours notify-users; docs/reports.md, "Notices to users"). One row per user and month
-- notified; the rate limit ([notices] period_days) reads sent_at. Columns:
-- warehouse/user_notices.py SCHEMA. `jobs`: the listed jobs as "cluster:job_id";
-- `digest`: sha256 of the message body sent.
CREATE TABLE meta.user_notices (
    user_name        VARCHAR NOT NULL,
    month            DATE NOT NULL,
    sent_at          TIMESTAMP NOT NULL,
    address          VARCHAR NOT NULL,
    jobs             VARCHAR[] NOT NULL,
    wasted_gpu_hours DOUBLE,
    digest           VARCHAR NOT NULL,
    PRIMARY KEY (user_name, month)
);
