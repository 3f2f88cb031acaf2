"""The review's "Kubernetes queues" table: only with rows, every string escaped."""

from __future__ import annotations

from datetime import date

import polars as pl

from reports.sections.kube_queues import kube_queues_section
from transforms.marts.mart_kube_queue_monthly import SCHEMA


def queues(name: str, cluster: str = "c1") -> pl.DataFrame:
    row = {c: None for c in SCHEMA} | {
        "cluster": cluster,
        "month": date(2026, 3, 1),
        "queue": name,
        "queue_kind": "kueue",
        "admitted_workloads": 12,
        "admission_wait_p50_seconds": 96.0,
        "usage_share_peak": 1.25,
    }
    return pl.DataFrame([row], schema=SCHEMA)


def test_table_with_rows_escapes_queue_names() -> None:
    section = kube_queues_section(queues('<script>alert("q")</script>'))
    assert section is not None and section.title == "Kubernetes queues"
    body = str(section.render_body())
    assert "<script>" not in body and "&lt;script&gt;alert(&#34;q&#34;)&lt;/script&gt;" in body
    assert "125.0" in body and "96.0" in body and ">cluster<" not in body


def test_no_section_without_rows_and_cluster_column_for_two_clusters() -> None:
    assert kube_queues_section(pl.DataFrame(schema=SCHEMA)) is None
    section = kube_queues_section(pl.concat([queues("a"), queues("b", cluster="c&2")]))
    assert section is not None and "c&amp;2" in str(section.render_body())
