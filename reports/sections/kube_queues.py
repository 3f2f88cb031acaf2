"""The review's "Kubernetes queues" table (marts.mart_kube_queue_monthly), only when the month
has queue rows. Every cell is escaped by the template."""

from __future__ import annotations

from functools import partial

import polars as pl

from reports.html import Column, Section, fmt_float, fmt_int, fmt_pct, table

fmt_one = partial(fmt_float, decimals=1)


def queue_columns(multi_cluster: bool) -> list[Column]:
    cluster = [Column("cluster", "cluster")] if multi_cluster else []
    return cluster + [
        Column("queue", "queue", wrap=True),
        Column("queue_kind", "kind"),
        Column("admitted_workloads", "admitted", fmt_int, True),
        Column("admission_wait_p50_seconds", "wait p50 (s)", fmt_one, True),
        Column("admission_wait_p95_seconds", "wait p95 (s)", fmt_one, True),
        Column("pending_workloads_mean", "pending mean", fmt_one, True),
        Column("pending_workloads_max", "pending max", fmt_one, True),
        Column("gpu_nominal_quota", "quota (GPUs)", fmt_one, True),
        Column("usage_share_mean", "usage / quota mean (%)", fmt_pct, True),
        Column("usage_share_peak", "usage / quota peak (%)", fmt_pct, True),
        Column("borrowed_gpu_hours", "borrowed GPU-hours", fmt_one, True),
        Column("scheduled_jobs", "Volcano jobs", fmt_int, True),
        Column("scheduling_duration_mean_seconds", "Volcano scheduling mean (s)", fmt_one, True),
    ]


def kube_queues_section(queues: pl.DataFrame) -> Section | None:
    """Per cluster and queue: admission waits, pending workloads, usage vs quota, Volcano times."""
    if queues.is_empty():
        return None
    frame = queues.sort("cluster", "queue_kind", "queue", nulls_last=True)
    values = {"table": table(frame, queue_columns(frame["cluster"].n_unique() > 1))}
    return Section("kube-queues", "Kubernetes queues", "sections/kube_queues.html", values)
