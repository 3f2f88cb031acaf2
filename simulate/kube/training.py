"""Gang-scheduled training jobs against one ClusterQueue quota (the two training nodes).

Jobs arrive as a Poisson stream that offers more GPU-time than the quota holds, so they
queue. Admission is strict FIFO: a job is admitted when all its pods fit at once (each pod
on one node), never before the job ahead of it. Two flavors share the queue:

- Kueue (``PyTorchJob`` owner, LocalQueue label ``research``): the job waits suspended, its
  pods are created only at admission, so the wait shows in Kueue's
  ``kueue_admission_wait_time_seconds``, not in the pods' created -> scheduled.
- Volcano (``PodGroup`` owner): the pods are created at submission and stay Pending until
  the gang fits; created -> last pod scheduled is the wait. These pods export no
  ``kube_pod_completion_time`` (their end comes from the phase series).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from simulate.kube.pods import Pod, bind, suffix
from simulate.kube.pool import SlotPool

HOUR = 3600
QUEUE_LABEL = "label_kueue_x_k8s_io_queue_name"
LOCAL_QUEUE = "research"
CLUSTER_QUEUE = "cq-research"
VOLCANO_QUEUE = "default"
KINDS = ("dense",) * 7 + ("starved", "idle_tail", "hog")  # a mature cluster: most gangs work


@dataclass
class TrainingJob:
    name: str
    scheduler: str  # kueue / volcano
    namespace: str
    submit: int
    admitted: int | None = None
    gpus: int = 0
    pods: list[Pod] = field(default_factory=list)


def _job(rng: np.random.Generator, index: int, t: int) -> tuple[TrainingJob, int, int]:
    scheduler = "kueue" if index % 3 != 2 else "volcano"
    namespace = "ml-research" if rng.random() < 0.6 else "ml-vision"
    prefix = "pt" if scheduler == "kueue" else "vc"
    job = TrainingJob(f"{prefix}-{suffix(rng, 5)}", scheduler, namespace, t)
    n_pods, per_pod = int(rng.choice([1, 2, 2])), int(rng.choice([4, 8]))
    job.gpus = n_pods * per_pod
    return job, n_pods, per_pod


def _pods(
    job: TrainingJob, n_pods: int, per_pod: int, departments: tuple[str, str], rng: np.random.Generator
) -> list[Pod]:
    mapped, vision = departments
    kind = str(rng.choice(KINDS))
    out = []
    for i in range(n_pods):
        role = "master" if i == 0 and job.scheduler == "kueue" else "worker"
        rank = 0 if role == "master" else i - (job.scheduler == "kueue")
        labels = {QUEUE_LABEL: LOCAL_QUEUE} if job.scheduler == "kueue" else {}
        if job.namespace == "ml-vision":
            labels["label_department"] = vision
        out.append(
            Pod(
                name=f"{job.name}-{role}-{rank}",
                namespace=job.namespace,
                owner_kind="PyTorchJob" if job.scheduler == "kueue" else "PodGroup",
                owner_name=job.name,
                container="pytorch" if job.scheduler == "kueue" else "trainer",
                resource="nvidia_com_gpu",
                count=per_pod,
                kind=kind,
                created=job.submit + 1,
                labels=labels,
                priority_class="batch",
                department=vision if job.namespace == "ml-vision" else mapped,
                department_source="pod_label" if job.namespace == "ml-vision" else "namespace_mapping",
                queue_name=LOCAL_QUEUE if job.scheduler == "kueue" else None,
                scheduler=job.scheduler,
                submit=job.submit,
                completion_time=job.scheduler == "kueue",
                scenario="training",
            )
        )
    return out


def run_training(
    pool: SlotPool, rng: np.random.Generator, window: int, departments: tuple[str, str]
) -> list[TrainingJob]:
    """Every job submitted in the window, admitted FIFO against the pool."""
    jobs: list[TrainingJob] = []
    t, last_admit = int(rng.integers(300, HOUR)), 0
    while t < window:
        job, n_pods, per_pod = _job(rng, len(jobs), t)
        job.pods = _pods(job, n_pods, per_pod, departments, rng)
        placed = pool.earliest(max(t + 1, last_admit), [per_pod] * n_pods)
        if placed is not None and placed[0] < window:
            job.admitted = last_admit = placed[0]
            run = int(rng.integers(2 * HOUR, 9 * HOUR))
            failed = rng.random() < 0.15
            for pod, slots in zip(job.pods, placed[1], strict=True):
                if job.scheduler == "kueue":
                    pod.created = job.admitted + 1
                bind(pod, rng, max(pod.created, job.admitted) + int(rng.integers(0, 3)), slots, run, window)
                if pod.end is not None:
                    pod.phase_end = "Failed" if failed else "Succeeded"
                    keep = HOUR if job.scheduler == "kueue" else HOUR // 2
                    pod.deleted = pod.end + keep if pod.end + keep < window else None
                pool.hold(pod.instances, pod.end)
        elif job.scheduler == "kueue":
            job.pods = []  # suspended all window: no pods exist
        jobs.append(job)
        t += int(rng.exponential(2.5 * HOUR)) + 60
    return jobs
