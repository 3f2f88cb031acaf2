"""Per-partition workload profiles: runtimes, limits, kinds and sizes the draws pick from."""

from __future__ import annotations

from dataclasses import dataclass

from simulate.job_spec import DAY, HOUR

WASTEFUL = ("idle", "idle_tail", "hog")
# The kind weights are those of a mature cluster: most runs do full-width work (dense) and a
# minority waste their GPUs (idle, asleep with memory held, starved, bursty, tiny kernels, an
# idle tail), more of them in the debug partition. Sloppy users (org.User.sloppy) draw the
# WASTEFUL kinds three times as often. benchmarks/flag_quality.py measures the review's flags
# against this mix (benchmarks/README.md).


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
            "dense": 0.84,
            "starved": 0.04,
            "idle_tail": 0.04,
            "hog": 0.01,
            "tiny": 0.01,
            "idle": 0.02,
            "bursty": 0.04,
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
        kinds={"bursty": 0.12, "dense": 0.76, "idle": 0.03, "hog": 0.03, "tiny": 0.02, "starved": 0.04},
        mig_kinds={"bursty": 0.12, "dense": 0.76, "idle": 0.03, "tiny": 0.04, "starved": 0.05},
        sizes={1: 0.6, 2: 0.25, 4: 0.1, 8: 0.05},
    ),
    "debug": _Partition(  # max 36 h: forgotten sessions sit idle for 20-30 h
        median_hours=0.4,
        sigma=0.9,
        max_limit=36 * HOUR,
        qos_high=0.0,
        names=("jupyter", "bash", "interactive", "notebook"),
        kinds={"idle": 0.12, "tiny": 0.04, "dense": 0.7, "starved": 0.05, "bursty": 0.05, "idle_tail": 0.04},
        mig_kinds={"idle": 0.12, "tiny": 0.05, "dense": 0.7, "starved": 0.06, "bursty": 0.07},
        sizes={1: 0.6, 2: 0.2, 4: 0.12, 8: 0.08},
    ),
}
LIMITS = (1800, HOUR, 2 * HOUR, 4 * HOUR, 8 * HOUR, 12 * HOUR, DAY, 36 * HOUR, 2 * DAY, 3 * DAY, 4 * DAY)
MIG_PROFILES = {"3g.40gb": 0.3, "2g.20gb": 0.3, "1g.10gb": 0.4}
MIG_CPUS = {"3g.40gb": 8, "2g.20gb": 4, "1g.10gb": 2}
EXIT_CODES = ("1:0", "1:0", "2:0", "127:0", "139:0")
