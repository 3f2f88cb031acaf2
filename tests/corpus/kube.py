"""Bad or odd kube-state-metrics series, as an OpenMetrics file read through the kube source's file
path (``KubeReader`` with ``kubernetes.path``), landed (``land``), staged with the arguments the
stg_kube__pods asset passes (``stg_kube__pods``, ``stg_kube__jobs``) and checked by the blocking
``gx_stg_kube__pods`` suite against the inventory.

Unless a case says otherwise a pod is what kube-state-metrics v2 writes, scraped every 60 s: Job
``train`` in namespace ``ml`` (mapped to department vision), created 00:00, scheduled on gpu-1
(8 GPUs) at 00:01, started 00:02, completed 01:02 (kube_pod_completion_time), deleted 01:04 on
2026-03-02, requesting one ``nvidia_com_gpu`` (and 4 cpu): 3600 GPU-seconds.
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import NamedTuple

import polars as pl
import pytest

from config import parse_config
from pipelines.assets.kube import kube_step_seconds
from pipelines.checks.gx_adapter import run_suite_on_frame
from pipelines.checks.kube_suites import node_gpus, staged_pods_frame, staged_pods_suite
from sources.kube.landing import Landing, land
from sources.kube.reader import KubeReader
from sources.openmetrics import OpenMetricsError
from tests.corpus import Case
from transforms.staging.stg_kube__jobs import stg_kube__jobs
from transforms.staging.stg_kube__pods import stg_kube__pods

DAY = datetime(2026, 3, 2)
EPOCH0 = 1772409600  # DAY in Unix seconds
STEP = 60
PHASES = ("Pending", "Running", "Succeeded", "Failed", "Unknown")


def sample(metric: str, labels: dict[str, str], t: int, value: float) -> str:
    return f"{metric}{{{','.join(f'{k}={chr(34)}{v}{chr(34)}' for k, v in labels.items())}}} {value} {EPOCH0 + t}"


def scraped(metric: str, labels: dict[str, str], a: int, b: int, value: float) -> list[str]:
    return [sample(metric, labels, t, value) for t in range(a, b, STEP)]


def pod(
    name: str,
    *,
    ns: str = "ml",
    node: str | None = "gpu-1",
    scheduled: int | None = 60,
    started: int | None = 120,
    finished: int | None = 3720,
    gone: int = 3840,
    completion: bool = True,
    resource: str | None = "nvidia_com_gpu",
    count: float = 1,
    phases: list[tuple[int, str]] | None = None,
    labels: dict[str, str] | None = None,
    extra: dict[str, str] | None = None,
) -> list[str]:
    """A pod's series (times in seconds after 00:00; ``node=None``: the node label stays empty)."""
    ids = {"namespace": ns, "pod": name, "uid": f"uid-{name}", **(extra or {})}
    bound = scheduled if scheduled is not None else gone
    out: list[str] = []

    def by_node(metric: str, labels: dict[str, str], value: float) -> None:  # node="" until bound, as KSM does
        out.extend(scraped(metric, {**labels, "node": ""}, 0, bound if node else gone, value))
        out.extend(scraped(metric, {**labels, "node": node}, bound, gone, value) if node else [])

    by_node("kube_pod_info", {**ids, "created_by_kind": "Job", "created_by_name": "train"}, 1)
    out += scraped("kube_pod_labels", {**ids, **(labels or {})}, 0, gone, 1)
    times = {
        "kube_pod_created": 0,
        "kube_pod_status_scheduled_time": scheduled,
        "kube_pod_start_time": started,
        "kube_pod_completion_time": finished if completion else None,
    }
    for metric, at in times.items():
        out += scraped(metric, ids, at, gone, EPOCH0 + at) if at is not None else []
    changes = phases or [
        (0, "Pending"),
        *([(started, "Running")] if started is not None else []),
        *([(finished, "Succeeded")] if finished is not None else []),
    ]
    for t in range(0, gone, STEP):
        now = [phase for at, phase in changes if at <= t][-1]
        out += [sample("kube_pod_status_phase", {**ids, "phase": p}, t, int(p == now)) for p in PHASES]
    for res, unit, value in ((resource, "integer", count), ("cpu", "core", 4)):
        if res is not None:
            request = {**ids, "container": "main", "resource": res, "unit": unit}
            by_node("kube_pod_container_resource_requests", request, value)
    return out


class Staged(NamedTuple):
    landing: Landing
    pods: pl.DataFrame
    rejects: pl.DataFrame  # stg_kube__pods' quarantine
    jobs: pl.DataFrame
    failed: list[tuple[str, int]]  # gx_stg_kube__pods: (expectation, unexpected rows); [] when it passes


def stage(lines: list[str]) -> Staged:
    """The file read for 2026-03-02, landed, staged for March (data up to 03-03) and checked."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "kube_state.om"
        path.write_text("\n".join(lines) + "\n# EOF\n")
        config = parse_config(
            {
                "warehouse": {"path": "w.duckdb"},
                "reports": {"dir": "reports"},
                "clusters": [
                    {
                        "name": "k8s",
                        "metrics": {"source": "file", "path": "metrics"},
                        "kubernetes": {"path": str(path), "step_seconds": STEP},
                        "inventory": {
                            "node_groups": [
                                {
                                    "hosts": "gpu-[1-2]",
                                    "gpu_model": "H100",
                                    "gpus_per_node": 8,
                                    "model_name": "NVIDIA H100",
                                    "gpu_memory_mib": 81559,
                                }
                            ]
                        },
                    }
                ],
                "rates": {"currency": "USD", "gpu_hour": {"H100": 2.5}},
                "org": {
                    "divisions": {"rd": {"name": "R&D"}},
                    "departments": {"vision": {"name": "Vision", "division": "rd"}},
                    "namespaces": [{"namespace": "ml", "department": "vision"}],
                },
            }
        )
        cluster = config.clusters[0]
        kube = cluster.kubernetes
        try:
            landing = land(KubeReader(cluster).read(DAY, DAY + timedelta(days=1)), kube, cluster.name, DAY.date())
        except OpenMetricsError as exc:
            raise OpenMetricsError(str(exc).replace(tmp + "/", "")) from exc
    pods, rejects = stg_kube__pods(
        landing.series,
        config.namespaces_frame(),
        window_start=datetime(2026, 3, 1),
        window_end=datetime(2026, 4, 1),
        data_end=DAY + timedelta(days=1),
        step_seconds=kube_step_seconds(cluster),
        department_labels=kube.department_labels,
        queue_label=kube.queue_label,
        gpu_resource=kube.gpu_resource,
        mig_resource_prefix=kube.mig_resource_prefix,
        mig_weights=dict(config.rates.mig_profile_weights),
        node_gpus=node_gpus(config.inventory_frame()),
        metrics=kube.metric_names.model_dump(),
    )
    check = run_suite_on_frame(
        staged_pods_suite(),
        staged_pods_frame(pods, config.inventory_frame()),
        ["staging", "stg_kube__pods"],
        "gx_stg_kube__pods",
    )
    failed = (
        []
        if check.passed
        else [(f["expectation"], f["unexpected_count"]) for f in check.metadata["failed_expectations"].value]
    )
    return Staged(landing, pods, rejects, stg_kube__jobs(pods), failed)


def staged_as(
    lines: list[str],
    columns: tuple[str, ...],
    rows: list[tuple],
    jobs: list[tuple] | None = None,
    failed: list[tuple[str, int]] | None = None,
) -> Callable[[], None]:
    """The pods staged (``columns``, sorted by namespace and pod), their jobs (job_id, state, gpus,
    n_nodes, gpu_seconds) when given, and what the pods' check fails on (nothing unless given)."""

    def check() -> None:
        got = stage(lines)
        assert got.pods.select(columns).rows() == rows, got.pods.select(columns).rows()
        if jobs is not None:
            assert got.jobs.select("job_id", "state", "gpus", "n_nodes", "gpu_seconds").rows() == jobs
        assert got.failed == (failed or []) and got.rejects.is_empty() and got.landing.quarantine.is_empty()

    return check


def at(hh: int, mm: int) -> datetime:
    return DAY + timedelta(hours=hh, minutes=mm)


def rejected(lines: list[str], part: str, row: tuple) -> Callable[[], None]:
    """One quarantine row ``(location, reason, payload, n_rows)`` in ``part`` (landing or staging)."""

    def check() -> None:
        got = stage(lines)
        quarantine = got.landing.quarantine if part == "landing" else got.rejects
        assert quarantine.select("location", "reason", "payload", "n_rows").rows() == [row]
        assert got.pods["pod"].to_list() == (["a"] if part == "landing" else []) and got.failed == []

    return check


def rejected_pod(lines: list[str], reason: str) -> Callable[[], None]:
    """The pod is quarantined in staging with ``reason``; another pod of the same day still bills."""

    def check() -> None:
        got = stage([*lines, *pod("b")])
        assert got.rejects.select("location", "reason").rows() == [(got.rejects["location"][0], reason)]
        assert got.rejects["location"][0].startswith("ml/a uid=")
        assert got.pods["pod"].to_list() == ["b"] and got.failed == []

    return check


def conflicting() -> None:
    lines = pod("a")
    with pytest.raises(OpenMetricsError) as caught:
        stage([*lines, lines[0].replace("} 1 ", "} 0 ")])
    assert str(caught.value) == "kube_state.om: 2 samples share a series and timestamp with other values"


def exported(lines: list[str]) -> list[str]:
    """As Prometheus stores kube-state-metrics scraped with honor_labels false and pod target labels."""
    moved = r'exported_namespace="\1",exported_pod="\2",namespace="monitoring",pod="kube-state-metrics-0"'
    return [re.sub(r'namespace="([^"]*)",pod="([^"]*)"', moved, line) for line in lines]


GPUS = ("namespace", "pod", "gpus", "gpu_slots", "gpu_seconds")
FLAPS = [(0, "Pending"), (120, "Running"), (1800, "Unknown"), (1920, "Running"), (3720, "Succeeded")]
TEAM = {"label_team": "search"}
PHYSICS = scraped("kube_namespace_labels", {"namespace": "physics", "label_department": "physics"}, 0, 3840, 1)
ORPHAN = [line.replace(',pod="a"', "") if line.startswith("kube_pod_created") else line for line in pod("a")]

CASES: list[Case] = [
    Case(
        "kube-pod-without-gpu-request",
        "kube",
        "pod cpu-only requesting only cpu, next to GPU pod a",
        "billed",
        "cpu-only is not staged (not a GPU workload); a is: 1 GPU, 3600 GPU-seconds",
        staged_as(pod("cpu-only", resource=None) + pod("a"), GPUS, [("ml", "a", 1.0, 1, 3600.0)]),
    ),
    Case(
        "kube-phase-flaps-unknown",
        "kube",
        "kube_pod_status_phase Running, Unknown 00:30-00:32 (node lost), Running "
        "again, Succeeded at 01:02; no kube_pod_completion_time",
        "billed",
        "ends at the last Running sample 01:01 (end_source phase, error bound 60 s): 3540 GPU-seconds, the Unknown "
        "minutes included",
        staged_as(
            pod("a", phases=FLAPS, completion=False),
            ("phase", "end_time", "end_source", "end_error_seconds", "gpu_seconds"),
            [("Succeeded", at(1, 1), "phase", 60, 3540.0)],
        ),
    ),
    Case(
        "kube-pod-without-node",
        "kube",
        'kube_pod_info and the requests keep node="" while the pod runs',
        "billed",
        "staged with node null: 3600 GPU-seconds; its job has no hosts (n_nodes 0), so the node capacity check "
        "skips it",
        staged_as(
            pod("a", node=None),
            ("node", "gpu_seconds"),
            [(None, 3600.0)],
            [("ml/Job/train", "COMPLETED", 1.0, 0, 3600.0)],
        ),
    ),
    Case(
        "kube-pending-forever",
        "kube",
        "pod never scheduled: phase Pending from 00:00 to the end of the data, 1 GPU requested",
        "billed",
        "staged open (is_open, end null) with start null and 0 GPU-seconds; job state PENDING",
        staged_as(
            pod("a", scheduled=None, started=None, finished=None, gone=86400),
            ("phase", "start_time", "end_time", "is_open", "gpus", "gpu_seconds"),
            [("Pending", None, None, True, 1.0, 0.0)],
            [("ml/Job/train", "PENDING", 1.0, 0, 0.0)],
        ),
    ),
    Case(
        "kube-mig-3g-40gb",
        "kube",
        'resource="nvidia_com_mig_3g_40gb" 1',
        "billed",
        "MIG profile 3g.40gb at its default weight 3/7: gpus 0.42857142857142855, 1542.8571428571427 GPU-seconds",
        staged_as(
            pod("a", resource="nvidia_com_mig_3g_40gb"),
            ("is_mig", "mig_profile", "gpus", "gpu_seconds"),
            [(True, "3g.40gb", 3 / 7, 1542.8571428571427)],
        ),
    ),
    Case(
        "kube-mig-unknown-profile",
        "kube",
        'resource="nvidia_com_mig_9g_90gb" 1 (no such profile)',
        "quarantined",
        "pod not staged; raw.quarantine (source stg_kube__pods): 'ml/a uid=uid-a', 'GPU resource "
        "nvidia_com_mig_9g_90gb names no MIG profile', 1 row",
        rejected(
            pod("a", resource="nvidia_com_mig_9g_90gb"),
            "staging",
            ("ml/a uid=uid-a", "GPU resource nvidia_com_mig_9g_90gb names no MIG profile", "nvidia_com_mig_9g_90gb", 1),
        ),
    ),
    Case(
        "kube-negative-gpu-request",
        "kube",
        'resource="nvidia_com_gpu" -1',
        "quarantined",
        "`negative GPU request (-1.0 GPUs)` at `ml/a uid=...`; not billed, the month builds",
        rejected_pod(pod("a", count=-1), "negative GPU request (-1.0 GPUs)"),
    ),
    Case(
        "kube-gpu-request-beyond-node",
        "kube",
        'resource="nvidia_com_gpu" 64 on gpu-1 (8 GPUs in the inventory)',
        "quarantined",
        "`64.0 GPUs requested on node gpu-1 of 8.0 GPUs`; not billed, the month builds",
        rejected_pod(pod("a", count=64), "64.0 GPUs requested on node gpu-1 of 8.0 GPUs"),
    ),
    Case(
        "kube-namespace-without-department",
        "kube",
        "pods in ml (mapped to vision), physics "
        "(kube_namespace_labels label_department=physics), sandbox (no labels, no mapping) and sandbox with pod "
        "label label_team=search",
        "billed",
        "departments vision (namespace_mapping), physics (namespace_label), "
        "unmapped (unmapped), search (pod_label); 3600 GPU-seconds each",
        staged_as(
            pod("a") + pod("b", ns="physics") + PHYSICS + pod("c", ns="sandbox") + pod("d", ns="sandbox", labels=TEAM),
            ("pod", "department", "department_source", "gpu_seconds"),
            [
                ("a", "vision", "namespace_mapping", 3600.0),
                ("b", "physics", "namespace_label", 3600.0),
                ("c", "unmapped", "unmapped", 3600.0),
                ("d", "search", "pod_label", 3600.0),
            ],
        ),
    ),
    Case(
        "kube-series-repeated-in-file",
        "kube",
        "every line of the pod's series written twice",
        "billed",
        "read once: 1 pod, 1 GPU, 3600 GPU-seconds",
        staged_as(pod("a") * 2, GPUS, [("ml", "a", 1.0, 1, 3600.0)]),
    ),
    Case(
        "kube-two-state-metrics-replicas",
        "kube",
        "every series twice, instance=10.0.0.7:8080 and 10.0.0.8:8080 (two kube-state-metrics replicas)",
        "billed",
        "one pod, 1 GPU (not 2), 3600 GPU-seconds",
        staged_as(
            pod("a", extra={"instance": "10.0.0.7:8080"}) + pod("a", extra={"instance": "10.0.0.8:8080"}),
            GPUS,
            [("ml", "a", 1.0, 1, 3600.0)],
            [("ml/Job/train", "COMPLETED", 1.0, 1, 3600.0)],
        ),
    ),
    Case(
        "kube-pod-series-without-pod-label",
        "kube",
        'kube_pod_created{namespace="ml",uid="uid-a"} (no pod label)',
        "quarantined",
        "raw.quarantine (source kube): 'kube_pod_created{}', 'pod series without a namespace or pod "
        "label', 64 samples 00:00-01:03; the pod's other series are staged",
        rejected(
            ORPHAN,
            "landing",
            (
                "kube_pod_created{}",
                "pod series without a namespace or pod label",
                "samples 2026-03-02 00:00:00.000000 .. 2026-03-02 01:03:00.000000",
                64,
            ),
        ),
    ),
    Case(
        "kube-conflicting-samples",
        "kube",
        "kube_pod_info of pod a at 00:00 written twice, with 1 and 0",
        "refused",
        "read fails: kube_state.om: 2 samples share a series and timestamp with other values",
        conflicting,
    ),
    Case(
        "kube-exported-namespace-and-pod",
        "kube",
        "kube-state-metrics scraped with honor_labels false: "
        "exported_namespace/exported_pod name the pods (ml/a; sandbox/b started 00:10), namespace/pod the "
        "exporter (monitoring/kube-state-metrics-0)",
        "billed",
        "each pod under its own name and department, as for DCGM series: ml/a vision 3600 GPU-seconds, sandbox/b "
        "unmapped 3120 GPU-seconds, two jobs",
        staged_as(
            exported(pod("a") + pod("b", ns="sandbox", started=600)),
            ("namespace", "pod", "department", "gpu_seconds"),
            [("ml", "a", "vision", 3600.0), ("sandbox", "b", "unmapped", 3120.0)],
            [("ml/Job/train", "COMPLETED", 1.0, 1, 3600.0), ("sandbox/Job/train", "COMPLETED", 1.0, 1, 3120.0)],
        ),
    ),
    Case(
        "kube-mig-media-extensions",
        "kube",
        'resource="nvidia_com_mig_1g_10gb_me" 1 (nvidia.com/mig-1g.10gb+me as kube-state-metrics sanitizes it)',
        "repaired",
        "MIG profile 1g.10gb+me at 1/7: 514.2857142857142 GPU-seconds",
        staged_as(
            pod("a", resource="nvidia_com_mig_1g_10gb_me"),
            ("mig_profile", "gpus", "gpu_seconds"),
            [("1g.10gb+me", 1 / 7, 1 / 7 * 3600)],
        ),
    ),
    Case(
        "kube-zero-gpu-request",
        "kube",
        'resource="nvidia_com_gpu" 0 (a template that sets the GPU count to 0)',
        "billed",
        "not a GPU workload: not staged, and the month's gx_stg_kube__pods check passes",
        staged_as(pod("a", count=0) + pod("b"), GPUS, [("ml", "b", 1.0, 1, 3600.0)]),
    ),
]
