"""Simulated organisation and workload: who submits which jobs, when, and how they would end.

Arrivals are a Poisson process thinned for a day/night cycle and weekends, one stream for
whole-GPU jobs and one for MIG-slice jobs, each calibrated to a target load of its capacity.
A few scripted jobs make sure every sacct feature shows up in any window of a day or more.
Times are integer seconds from the window start.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import date
from typing import Any, TypeVar

import numpy as np

from cardhours.simulate.cluster import Cluster, Request

HOUR, DAY = 3600, 86400
TARGET_LOAD = 0.75  # offered GPU-time / capacity; allocation lands lower (ramp-up, packing)
FIRST_JOB_ID = 1000
KINDS = ("dense", "bursty", "starved", "hog", "tiny", "idle_tail", "idle")
WASTEFUL = ("idle", "idle_tail", "hog")

DEPARTMENTS = (  # key, name, division
    ("vision", "Computer Vision", "research"),
    ("nlp", "Language Models", "research"),
    ("speech", "Speech and Audio", "research"),
    ("search", "Search Ranking", "product"),
    ("recsys", "Recommendations", "product"),
    ("ads", "Ads Quality", "product"),
)
DIVISIONS = {"research": "Research", "product": "Product"}
ACCOUNT_SUFFIXES = ("train", "infer", "dev")
UNMAPPED_ACCOUNT = "legacy-ml"
SURNAMES = (
    "kumar", "chen", "garcia", "smith", "nguyen", "mueller", "rossi", "tanaka", "silva", "okafor",
    "novak", "ivanova", "kim", "haddad", "olsen", "dubois", "moreau", "fischer", "lopez", "khan",
    "patel", "singh", "wang", "li", "zhang", "jensen", "costa", "santos", "ali", "yilmaz",
    "kowalski", "horvat", "bauer", "meyer", "ito", "sato", "park", "cohen", "levi", "brown",
)


@dataclass(frozen=True)
class Account:
    name: str
    department: str
    mapped: bool  # False: left out of the written config (lands in "unmapped")


@dataclass(frozen=True)
class User:
    name: str
    uid: int
    account: str  # home account
    weight: float  # relative submission activity
    sloppy: bool  # leaves GPUs idle more often


@dataclass(frozen=True)
class Org:
    divisions: dict[str, str]  # key -> name
    departments: tuple[tuple[str, str, str], ...]  # (key, name, division)
    accounts: tuple[Account, ...]
    users: tuple[User, ...]

    def account(self, name: str) -> Account:
        return next(a for a in self.accounts if a.name == name)


def build_org(seed: int) -> Org:
    """4-6 departments over two divisions, 1-3 accounts each plus one unmapped, ~40 users."""
    rng = np.random.default_rng([seed, 2])
    research = [d for d in DEPARTMENTS if d[2] == "research"]
    product = [d for d in DEPARTMENTS if d[2] == "product"]
    extra = int(rng.integers(0, 3))
    picks = set(rng.choice(3, 2 + extra // 2 + extra % 2, replace=False).tolist())
    depts = tuple(research[i] for i in sorted(picks)) + tuple(
        product[i] for i in sorted(rng.choice(3, 2 + extra // 2, replace=False).tolist())
    )
    accounts = [
        Account(f"{key}-{suffix}", key, True)
        for key, _, _ in depts
        for suffix in ACCOUNT_SUFFIXES[: int(rng.integers(1, 4))]
    ]
    accounts.append(Account(UNMAPPED_ACCOUNT, depts[int(rng.integers(len(depts)))][0], False))
    n_users = int(rng.integers(36, 45))
    letters = "abcdefghijklmnoprstvwyz"
    names = [f"{letters[p // len(SURNAMES)]}{SURNAMES[p % len(SURNAMES)]}"
             for p in rng.choice(len(letters) * len(SURNAMES), n_users, replace=False)]
    homes = [UNMAPPED_ACCOUNT] * 2 + [accounts[i].name for i in rng.integers(0, len(accounts) - 1, n_users - 2)]
    users = tuple(
        User(names[i], 20001 + i, homes[i], float(rng.lognormal(0.0, 0.8)), bool(rng.random() < 0.15))
        for i in range(n_users)
    )
    return Org(dict(DIVISIONS), depts, tuple(accounts), users)


@dataclass(frozen=True)
class JobSpec:
    """One submitted job or array task. In a draft, ``eligible`` is the delay after submit."""

    job_id_raw: int
    name: str
    user: User
    account: str
    partition: str
    qos: str
    submit: int
    eligible: int
    request: Request
    typed: bool  # the request names the GPU type (ReqTRES gres/gpu:<type>)
    cpus_per_slot: int
    timelimit: int
    duration: int  # runtime if nothing ends it first
    kind: str
    array_id: int | None = None
    array_task: int | None = None
    array_limit: int | None = None  # at most this many tasks of the array run at once
    patience: int | None = None  # cancelled if still pending this long after submit
    cancel_after: int | None = None  # cancelled this long after start
    fail_after: int | None = None  # FAILED with exit_code this long after start
    exit_code: str = "0:0"
    node_fail_after: int | None = None  # NODE_FAIL this long after start, then requeued
    canceller_uid: int | None = None
    srun_step: bool = False  # has a ".0" step besides .batch and .extern

    @property
    def job_id(self) -> str:
        """sacct JobID: ``123`` or ``100_7`` for an array task."""
        return str(self.job_id_raw) if self.array_id is None else f"{self.array_id}_{self.array_task}"

    @property
    def slots(self) -> int:
        """Devices or MIG instances held when running."""
        return 1 if self.request.mig_profile else self.request.gpus


@dataclass(frozen=True)
class _Partition:
    median_hours: float
    sigma: float
    max_limit: int
    qos_high: float
    names: tuple[str, ...]
    kinds: dict[str, float]
    mig_kinds: dict[str, float]
    sizes: dict[int, float]


PARTITIONS = {
    "train": _Partition(
        median_hours=5.0, sigma=1.3, max_limit=4 * DAY, qos_high=0.15,
        names=("llm-pretrain", "vit-finetune", "ddp-train", "bert-ft", "diffusion", "rl-ppo"),
        kinds={"dense": .52, "starved": .14, "idle_tail": .12, "hog": .05, "tiny": .03, "idle": .06, "bursty": .08},
        mig_kinds={},
        sizes={1: .22, 2: .15, 4: .2, 8: .3, 16: .07, 32: .04, 64: .02},
    ),
    "infer": _Partition(
        median_hours=2.0, sigma=1.1, max_limit=2 * DAY, qos_high=0.2,
        names=("serve-api", "batch-infer", "embed", "eval"),
        kinds={"bursty": .55, "dense": .1, "idle": .1, "hog": .12, "tiny": .05, "starved": .08},
        mig_kinds={"bursty": .6, "dense": .1, "idle": .12, "tiny": .08, "starved": .1},
        sizes={1: .6, 2: .25, 4: .1, 8: .05},
    ),
    "debug": _Partition(  # max 36 h: forgotten sessions sit idle for 20-30 h
        median_hours=0.4, sigma=0.9, max_limit=36 * HOUR, qos_high=0.0,
        names=("jupyter", "bash", "interactive", "notebook"),
        kinds={"idle": .3, "tiny": .15, "dense": .2, "starved": .15, "bursty": .1, "idle_tail": .1},
        mig_kinds={"idle": .3, "tiny": .2, "dense": .2, "starved": .15, "bursty": .15},
        sizes={1: .6, 2: .2, 4: .12, 8: .08},
    ),
}
LIMITS = (1800, HOUR, 2 * HOUR, 4 * HOUR, 8 * HOUR, 12 * HOUR, DAY, 36 * HOUR, 2 * DAY, 3 * DAY, 4 * DAY)
MIG_PROFILES = {"3g.40gb": 0.3, "2g.20gb": 0.3, "1g.10gb": 0.4}
MIG_CPUS = {"3g.40gb": 8, "2g.20gb": 4, "1g.10gb": 2}
EXIT_CODES = ("1:0", "1:0", "2:0", "127:0", "139:0")


K = TypeVar("K")


def _choice(rng: np.random.Generator, weights: Mapping[K, float]) -> K:
    """A key drawn with probability proportional to its weight."""
    keys = list(weights)
    p = np.array([weights[k] for k in keys], dtype=float)
    return keys[int(rng.choice(len(keys), p=p / p.sum()))]


def _whole_models(cluster: Cluster) -> dict[str, int]:
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
    models = _whole_models(cluster)
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
        "kind": kind, "duration": duration, "timelimit": timelimit,
        "eligible": int(rng.uniform(1, 10) * HOUR) if rng.random() < 0.03 else 0,
        "srun_step": nodes > 1 and bool(rng.random() < 0.7), **fate,
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
    shares = {"infer": .7, "debug": .3} if mig else {"train": .6, "infer": .25, "debug": .15}
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
        "job_id_raw": 0, "name": name, "user": user, "account": account, "partition": partition,
        "qos": "high" if rng.random() < part.qos_high else "normal", "submit": 0, "request": request,
        "typed": typed, "cpus_per_slot": cpus, "array_limit": limit,
    }
    return [JobSpec(**common, **_task(rng, partition, user, mig, request.nodes)) for _ in range(n_tasks)]


def mean_work(rng: np.random.Generator, cluster: Cluster, org: Org, mig: bool, n: int = 2000) -> float:
    """Mean slot-seconds one submission asks for (runtime capped by its limit)."""
    total = 0
    for _ in range(n):
        total += sum(t.slots * min(t.duration, t.timelimit) for t in draw_submission(rng, cluster, org, mig))
    return total / n


def _activity(t: np.ndarray, first_weekday: int) -> np.ndarray:
    """Relative submission rate at t (weekly mean 1): busy afternoons, quiet weekends."""
    hour = (t % DAY) / HOUR
    weekday = (first_weekday + t // DAY) % 7
    return (1.0 + 0.5 * np.cos(2 * np.pi * (hour - 14.0) / 24.0)) * np.where(weekday < 5, 1.2, 0.5)


def arrivals(rng: np.random.Generator, rate: float, horizon: int, first_weekday: int) -> np.ndarray:
    """Submission times (s) of a Poisson process with mean rate ``rate``/s, thinned by activity."""
    peak = rate * 1.5 * 1.2
    n = int(rng.poisson(peak * horizon))
    times = np.sort(rng.uniform(0, horizon, size=n))
    keep = rng.uniform(0, peak, size=n) < rate * _activity(times, first_weekday)
    return np.floor(times[keep]).astype(np.int64)


def _capacity(cluster: Cluster, mig: bool) -> int:
    """Whole GPUs outside MIG nodes, or MIG instances on MIG nodes."""
    return sum(8 * len(n.mig_layout or (0,)) for n in cluster.nodes if (n.mig_layout is not None) == mig)


Submission = tuple[int, list[JobSpec]]  # submit time, drafts (one, or an array's tasks)


def _stream(cluster: Cluster, org: Org, mig: bool, start: date, horizon: int, seed: int) -> list[Submission]:
    """(submit time, drafts) of one stream, its rate calibrated to TARGET_LOAD."""
    capacity = _capacity(cluster, mig)
    if capacity == 0:
        return []
    work = mean_work(np.random.default_rng([seed, 3, int(mig)]), cluster, org, mig)
    rng = np.random.default_rng([seed, 4, int(mig)])
    times = arrivals(rng, TARGET_LOAD * capacity / work, horizon, start.weekday())
    return [(int(t), draw_submission(rng, cluster, org, mig)) for t in times]


def _scripted(cluster: Cluster, org: Org, horizon: int) -> list[Submission]:
    """Jobs that exercise requeue, failure, timeout, cancels, arrays and a pending array range."""
    users = sorted(org.users, key=lambda u: -u.weight)
    base = JobSpec(
        job_id_raw=0, name="pretrain-ckpt", user=users[0], account=users[0].account, partition="train",
        qos="normal", submit=0, eligible=0, request=Request(1, 1, (next(iter(_whole_models(cluster))),)),
        typed=True, cpus_per_slot=8, timelimit=12 * HOUR, duration=6 * HOUR, kind="dense",
    )

    def by(i: int, **changes: Any) -> JobSpec:
        return replace(base, user=users[i], account=users[i].account, **changes)

    span = min(horizon, DAY)
    sweep = [by(5, name="sweep-lr", duration=(2 + i % 3) * HOUR, timelimit=4 * HOUR) for i in range(6)]
    # Throttled to 5 at a time and submitted 5 h before the end: tasks 5-20 are still pending.
    tail = [by(6, name="hpo-trial", duration=(8 + i % 5) * HOUR, timelimit=14 * HOUR, array_limit=5) for i in range(21)]
    return [
        (int(span * 0.05), [replace(base, node_fail_after=2 * HOUR)]),
        (int(span * 0.10), [by(1, name="ddp-train", kind="starved", fail_after=40 * 60, exit_code="1:0")]),
        (int(span * 0.15), [by(2, name="vit-finetune", kind="idle_tail", duration=8 * HOUR, timelimit=4 * HOUR)]),
        (int(span * 0.20), [by(3, name="bash", partition="debug", kind="idle", cancel_after=3 * HOUR,
                               canceller_uid=users[3].uid)]),
        (int(span * 0.25), [by(4, name="nightly-eval", eligible=8 * HOUR, patience=3 * HOUR,
                               canceller_uid=users[4].uid)]),
        (int(span * 0.30), sweep),
        (max(0, horizon - 5 * HOUR), tail),
    ]


def _number(submissions: list[Submission], horizon: int) -> list[JobSpec]:
    """Ids in submission order; an array takes a master id, then one id per task."""
    specs: list[JobSpec] = []
    next_id = FIRST_JOB_ID
    for submit, drafts in sorted(submissions, key=lambda s: s[0]):
        array_id = next_id if len(drafts) > 1 else None
        next_id += array_id is not None
        for task, draft in enumerate(drafts):
            eligible = submit + draft.eligible if submit + draft.eligible < horizon else submit
            is_task = array_id is not None
            specs.append(replace(
                draft, job_id_raw=next_id, submit=submit, eligible=eligible, array_id=array_id,
                array_task=task if is_task else None, array_limit=draft.array_limit if is_task else None,
            ))
            next_id += 1
    return specs


def generate_jobs(cluster: Cluster, org: Org, start: date, days: int, seed: int) -> list[JobSpec]:
    """Every job submitted in the window [start, start + days), in id order."""
    if days < 1:
        raise ValueError(f"days must be at least 1, got {days}")
    horizon = days * DAY
    submissions = _scripted(cluster, org, horizon)
    for mig in (False, True):
        submissions += _stream(cluster, org, mig, start, horizon, seed)
    return _number(submissions, horizon)
