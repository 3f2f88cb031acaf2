"""Kueue and Volcano series of the simulated training queue (as segments).

Kueue (per ClusterQueue): pending workloads (jobs submitted, not yet admitted), GPU usage
of admitted workloads (held from admission until their last pod ends) against the nominal
quota, and the admission wait histogram's ``_bucket``/``_sum``/``_count`` (counters from 0 at the
window start; written as gauge families, as the energy counter is). Volcano: the
end-to-end scheduling duration (milliseconds) of each job, from its admission on.
"""

from __future__ import annotations

from simulate.kube.om_text import Series
from simulate.kube.training import CLUSTER_QUEUE, VOLCANO_QUEUE, TrainingJob

GPU = "nvidia.com/gpu"
# Kueue's admission wait buckets (seconds): 1, 2, 4, ... 8192, then +Inf.
WAIT_BUCKETS = [float(2**k) for k in range(14)]
FLAVOR = "default-flavor"
FAMILIES: dict[str, tuple[str, str]] = {
    "kueue_pending_workloads": ("gauge", "The number of pending workloads, per 'cluster_queue' and 'status'."),
    "kueue_cluster_queue_resource_usage": ("gauge", "Reports the cluster_queue's total resource usage."),
    "kueue_cluster_queue_nominal_quota": ("gauge", "Reports the cluster_queue's resource nominal quota."),
    "kueue_admission_wait_time_seconds_bucket": ("gauge", "Time from creation to admission of workloads (buckets)."),
    "kueue_admission_wait_time_seconds_sum": ("gauge", "Time from creation to admission of workloads (sum)."),
    "kueue_admission_wait_time_seconds_count": ("gauge", "Time from creation to admission of workloads (count)."),
    "volcano_e2e_job_scheduling_duration": ("gauge", "E2E job scheduling duration (milliseconds)."),
}


def _steps(events: list[tuple[int, float]], window: int) -> list[tuple[int, int, float]]:
    """A running sum of (time, delta) events as constant segments over [0, window)."""
    segments, level, since = [], 0.0, 0
    for t, delta in sorted(events):
        if t >= window:
            break
        if t > since:
            segments.append((since, t, level))
        level, since = level + delta, max(since, t)
    segments.append((since, window, level))
    return [s for s in segments if s[1] > s[0]]


def _release(job: TrainingJob, window: int) -> int:
    ends = [p.end for p in job.pods]
    return window if any(e is None for e in ends) else max(e for e in ends if e is not None)


def kueue_series(jobs: list[TrainingJob], quota_gpus: int, window: int) -> list[Series]:
    kueue = [j for j in jobs if j.scheduler == "kueue"]
    cq = {"cluster_queue": CLUSTER_QUEUE}
    pending = [(j.submit, 1.0) for j in kueue] + [(j.admitted, -1.0) for j in kueue if j.admitted is not None]
    usage = [(j.admitted, float(j.gpus)) for j in kueue if j.admitted is not None]
    usage += [(_release(j, window), -float(j.gpus)) for j in kueue if j.admitted is not None]
    admitted = [j for j in kueue if j.admitted is not None]
    resource = {**cq, "flavor": FLAVOR, "resource": GPU}
    return [
        Series("kueue_pending_workloads", {**cq, "status": "active"}, _steps(pending, window)),
        Series("kueue_pending_workloads", {**cq, "status": "inadmissible"}, [(0, window, 0.0)]),
        Series("kueue_cluster_queue_resource_usage", resource, _steps(usage, window)),
        Series("kueue_cluster_queue_nominal_quota", resource, [(0, window, float(quota_gpus))]),
        Series(
            "kueue_admission_wait_time_seconds_sum",
            dict(cq),
            _steps([(j.admitted, float(j.admitted - j.submit)) for j in admitted], window),
        ),
        Series(
            "kueue_admission_wait_time_seconds_count", dict(cq), _steps([(j.admitted, 1.0) for j in admitted], window)
        ),
        *_wait_buckets(admitted, cq, window),
    ]


def _wait_buckets(admitted: list[TrainingJob], cq: dict[str, str], window: int) -> list[Series]:
    """Cumulative counters per upper bound ``le``: admissions whose wait was at most ``le``."""
    out = []
    for le in [*WAIT_BUCKETS, float("inf")]:
        label = "+Inf" if le == float("inf") else f"{le:g}"
        events = [(j.admitted, 1.0) for j in admitted if j.admitted - j.submit <= le]
        out.append(Series("kueue_admission_wait_time_seconds_bucket", {**cq, "le": label}, _steps(events, window)))
    return out


def volcano_series(jobs: list[TrainingJob], window: int) -> list[Series]:
    out = []
    for job in jobs:
        if job.scheduler != "volcano" or job.admitted is None:
            continue
        gone = [p.deleted for p in job.pods]
        end = window if any(d is None for d in gone) else max(d for d in gone if d is not None)
        labels = {"job_name": job.name, "queue": VOLCANO_QUEUE, "job_namespace": job.namespace}
        out.append(
            Series(
                "volcano_e2e_job_scheduling_duration",
                labels,
                [(job.admitted, end, 1000.0 * (job.admitted - job.submit))],
            )
        )
    return out
