"""What each simulated workload kind was built to be, in the review's flag reasons: the one
declaration the flag-quality benchmark (benchmarks/flag_quality.py) scores the flags against.

The kinds are the shapes of ``simulate/shapes.py``, fitted to the real H200 trace; the reasons
each should draw are those the flag rules give that trace's jobs (docs/marts.md, "How
INPUT_BOUND was designed"): a kind is wasteful by construction or it is not, whatever the
thresholds are. Two reasons are not about what a job did on its GPUs but where and how long it
ran (DEBUG_OVER_LIMIT: the debug partition's policy; MULTINODE_FRAGMENTED: the scheduler's
placement); no kind expects them.
"""

from __future__ import annotations

from contracts.flags import flag_reason
from simulate.shapes import ALLOCATION_KINDS

HEALTHY_KINDS = ("dense",)  # full-width kernels all the time: nothing to flag

EXPECTED_REASONS: dict[str, frozenset[str]] = {
    "dense": frozenset(),
    "idle": frozenset({"ZERO_UTIL"}),  # a context and nothing else
    "hog": frozenset({"ZERO_UTIL", "MEMORY_HELD_IDLE"}),  # memory held, asleep
    "tiny": frozenset({"LOW_UTIL", "BUSY_ENGINE_IDLE_SMS", "OVERSIZED"}),  # one-thread kernels
    "starved": frozenset({"LOW_UTIL", "INPUT_BOUND", "OVERSIZED"}),  # waits for its data loader
    "bursty": frozenset({"LOW_UTIL", "INPUT_BOUND", "OVERSIZED"}),  # short bursts, idle between
    "idle_tail": frozenset({"IDLE_TAIL"}),  # dense, then hours asleep before it ends
}

# Expected only of some runs of the kinds above: OVERSIZED of a run on one whole GPU or one
# MIG slice larger than the smallest (a multi-GPU run or a 1g slice has no smaller MIG shape);
# IDLE_TAIL of a run that ended in the window with a tail of at least the threshold.
SIZE_REASON = "OVERSIZED"
TAIL_REASON = "IDLE_TAIL"
SMALLEST_MIG_PREFIX = "1g."

POLICY_REASONS = ("DEBUG_OVER_LIMIT", "MULTINODE_FRAGMENTED")


def _check() -> None:
    """Every code named here is a reason of contracts/flags.py and every kind the simulator
    allocates has its entry (a mismatch fails at import, naming what to fix)."""
    missing = set(ALLOCATION_KINDS) ^ set(EXPECTED_REASONS)
    if missing:
        raise KeyError(
            f"simulate/expected_flags.py EXPECTED_REASONS and simulate/shapes.py ALLOCATION_KINDS "
            f"differ in {sorted(missing)}: give every kind its expected reasons"
        )
    for codes in (*EXPECTED_REASONS.values(), (SIZE_REASON, TAIL_REASON), POLICY_REASONS):
        for code in codes:
            flag_reason(code)


_check()


def kinds_expecting(reason: str) -> tuple[str, ...]:
    """The kinds built to draw ``reason`` (empty for a policy reason)."""
    return tuple(kind for kind, reasons in EXPECTED_REASONS.items() if reason in reasons)
