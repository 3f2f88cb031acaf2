"""Per-partition workload profiles: runtimes, limits, kinds and sizes the draws pick from."""

from __future__ import annotations

from dataclasses import dataclass

from simulate.job_spec import DAY, HOUR

WASTEFUL = ("idle", "idle_tail", "hog")


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
        median_hours=5.0,
        sigma=1.3,
        max_limit=4 * DAY,
        qos_high=0.15,
        names=("llm-pretrain", "vit-finetune", "ddp-train", "bert-ft", "diffusion", "rl-ppo"),
        kinds={
            "dense": 0.52,
            "starved": 0.14,
            "idle_tail": 0.12,
            "hog": 0.05,
            "tiny": 0.03,
            "idle": 0.06,
            "bursty": 0.08,
        },
        mig_kinds={},
        sizes={1: 0.22, 2: 0.15, 4: 0.2, 8: 0.3, 16: 0.07, 32: 0.04, 64: 0.02},
    ),
    "infer": _Partition(
        median_hours=2.0,
        sigma=1.1,
        max_limit=2 * DAY,
        qos_high=0.2,
        names=("serve-api", "batch-infer", "embed", "eval"),
        kinds={"bursty": 0.55, "dense": 0.1, "idle": 0.1, "hog": 0.12, "tiny": 0.05, "starved": 0.08},
        mig_kinds={"bursty": 0.6, "dense": 0.1, "idle": 0.12, "tiny": 0.08, "starved": 0.1},
        sizes={1: 0.6, 2: 0.25, 4: 0.1, 8: 0.05},
    ),
    "debug": _Partition(  # max 36 h: forgotten sessions sit idle for 20-30 h
        median_hours=0.4,
        sigma=0.9,
        max_limit=36 * HOUR,
        qos_high=0.0,
        names=("jupyter", "bash", "interactive", "notebook"),
        kinds={"idle": 0.3, "tiny": 0.15, "dense": 0.2, "starved": 0.15, "bursty": 0.1, "idle_tail": 0.1},
        mig_kinds={"idle": 0.3, "tiny": 0.2, "dense": 0.2, "starved": 0.15, "bursty": 0.15},
        sizes={1: 0.6, 2: 0.2, 4: 0.12, 8: 0.08},
    ),
}
LIMITS = (1800, HOUR, 2 * HOUR, 4 * HOUR, 8 * HOUR, 12 * HOUR, DAY, 36 * HOUR, 2 * DAY, 3 * DAY, 4 * DAY)
MIG_PROFILES = {"3g.40gb": 0.3, "2g.20gb": 0.3, "1g.10gb": 0.4}
MIG_CPUS = {"3g.40gb": 8, "2g.20gb": 4, "1g.10gb": 2}
EXIT_CODES = ("1:0", "1:0", "2:0", "127:0", "139:0")
