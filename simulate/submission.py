"""Random draws of one submission: who submits, where, what they ask for and how the job ends."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

import numpy as np

from simulate.cluster import Cluster, Request
from simulate.job_spec import DAY, HOUR, JobSpec
from simulate.org import Org, User
from simulate.partitions import EXIT_CODES, LIMITS, MIG_CPUS, MIG_PROFILES, PARTITIONS, WASTEFUL

K = TypeVar("K")


def _choice(rng: np.random.Generator, weights: Mapping[K, float]) -> K:
    """A key drawn with probability proportional to its weight."""
    keys = list(weights)
    p = np.array([weights[k] for k in keys], dtype=float)
    return keys[int(rng.choice(len(keys), p=p / p.sum()))]


def whole_models(cluster: Cluster) -> dict[str, int]:
    """Nodes per model outside MIG nodes, most common first."""
    counts: dict[str, int] = {}
    for node in cluster.nodes:
        if node.mig_layout is None:
            counts[node.model.gpu_model] = counts.get(node.model.gpu_model, 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: -kv[1]))


def _request(rng: np.random.Generator, cluster: Cluster, partition: str, mig: bool) -> tuple[Request, bool]:
    """The GPU request and whether it is typed."""
    if mig:
        return Request(1, 1, ("A100",), _choice(rng, MIG_PROFILES)), True
    models = whole_models(cluster)
    typed = bool(rng.random() < 0.35)
    chosen = (_choice(rng, models),) if typed else tuple(models)
    max_nodes = max(1, int(0.8 * max(models[m] for m in chosen)))  # never the whole pool
    sizes = {s: w for s, w in PARTITIONS[partition].sizes.items() if s <= 8 or s // 8 <= max_nodes}
    gpus = _choice(rng, sizes)
    return Request(gpus, max(1, gpus // 8), chosen), typed


def _timelimit(rng: np.random.Generator, duration: int, max_limit: int) -> int:
    """Users ask for 1.2-3x the runtime, rounded up to a usual value; 8% underestimate."""
    if rng.random() < 0.08 and duration > LIMITS[0]:
        return max(v for v in LIMITS if v < duration)
    want = duration * rng.uniform(1.2, 3.0)
    return min([v for v in LIMITS if v >= want and v <= max_limit], default=max_limit)


def _task(rng: np.random.Generator, partition: str, user: User, mig: bool, nodes: int) -> dict[str, Any]:
    """Runtime, limit, workload kind and fate of one job or array task."""
    part = PARTITIONS[partition]
    weights = dict(part.mig_kinds if mig else part.kinds)
    if user.sloppy:
        weights = {k: w * (3.0 if k in WASTEFUL else 1.0) for k, w in weights.items()}
    kind = _choice(rng, weights)
    median = part.median_hours * HOUR * (3.0 if mig else 1.0)  # slices mostly serve models: longer
    duration = int(np.clip(rng.lognormal(np.log(median), part.sigma), 60, 6 * DAY))
    timelimit = _timelimit(rng, duration, part.max_limit)
    if kind == "idle_tail" and duration < 3 * HOUR:
        kind = "dense"
    if partition == "debug" and kind == "idle" and rng.random() < 0.5:
        duration, timelimit = int(rng.uniform(20, 30) * HOUR), 36 * HOUR  # forgotten session
    fate: dict[str, Any] = {}
    u = rng.random()
    if u < 0.07:
        fail_after = max(30, int(duration * rng.uniform(0.005, 0.6)))
        fate = {"fail_after": fail_after, "exit_code": str(rng.choice(EXIT_CODES))}
    elif u < 0.12:
        uid = user.uid if rng.random() < 0.9 else 0
        fate = {"cancel_after": max(60, int(duration * rng.uniform(0.05, 0.9))), "canceller_uid": uid}
    elif u < 0.135 and duration > HOUR:
        fate = {"node_fail_after": int(duration * rng.uniform(0.1, 0.9))}
    if rng.random() < 0.06:
        fate["patience"] = int(rng.uniform(600, 12 * HOUR))
        fate.setdefault("canceller_uid", user.uid)
    return {
        "kind": kind,
        "duration": duration,
        "timelimit": timelimit,
        "eligible": int(rng.uniform(1, 10) * HOUR) if rng.random() < 0.03 else 0,
        "srun_step": nodes > 1 and bool(rng.random() < 0.7),
        **fate,
    }


def _user_and_account(rng: np.random.Generator, org: Org) -> tuple[User, str]:
    """A user by activity; their home account, sometimes another of their department."""
    user = org.users[int(rng.choice(len(org.users), p=_user_p(org)))]
    home = org.account(user.account)
    others = [a.name for a in org.accounts if a.department == home.department and a.mapped and a != home]
    if home.mapped and others and rng.random() < 0.15:
        return user, others[int(rng.integers(len(others)))]
    return user, user.account


def _user_p(org: Org) -> np.ndarray:
    w = np.array([u.weight for u in org.users])
    return w / w.sum()


def draw_submission(rng: np.random.Generator, cluster: Cluster, org: Org, mig: bool) -> list[JobSpec]:
    """Draft(s) of one submission: a job, or the tasks of an array."""
    user, account = _user_and_account(rng, org)
    shares = {"infer": 0.7, "debug": 0.3} if mig else {"train": 0.6, "infer": 0.25, "debug": 0.15}
    partition = _choice(rng, shares)
    request, typed = _request(rng, cluster, partition, mig)
    part = PARTITIONS[partition]
    n_tasks, limit, name = 1, None, str(rng.choice(part.names))
    if not mig and partition != "debug" and rng.random() < 0.04:
        n_tasks, name = int(rng.integers(4, 17)), str(rng.choice(("sweep-lr", "hpo-trial")))
        limit, request = (4 if rng.random() < 0.5 else None), Request(1, 1, request.models)
    if request.mig_profile:
        cpus = MIG_CPUS[request.mig_profile]
    else:
        cpus = int(rng.choice((8, 16) if partition == "train" else (4, 8)))
    common: dict[str, Any] = {
        "job_id_raw": 0,
        "name": name,
        "user": user,
        "account": account,
        "partition": partition,
        "qos": "high" if rng.random() < part.qos_high else "normal",
        "submit": 0,
        "request": request,
        "typed": typed,
        "cpus_per_slot": cpus,
        "array_limit": limit,
    }
    return [JobSpec(**common, **_task(rng, partition, user, mig, request.nodes)) for _ in range(n_tasks)]


def mean_work(rng: np.random.Generator, cluster: Cluster, org: Org, mig: bool, n: int = 2000) -> float:
    """Mean slot-seconds one submission asks for (runtime capped by its limit)."""
    total = 0
    for _ in range(n):
        total += sum(t.slots * min(t.duration, t.timelimit) for t in draw_submission(rng, cluster, org, mig))
    return total / n
