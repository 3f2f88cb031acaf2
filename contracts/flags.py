"""The review's flag reasons, declared once: code, severities, meaning and recommendation.

The rules (transforms/marts/flag_rules) take their severity and recommendation from here, the
flags check (pipelines/assets/review.py) accepts only these codes and severities, and the
flagged_jobs.csv and the review pages order a run's reasons by this registry's order.
The rule conditions and their thresholds are in transforms/marts/flag_rules and docs/marts.md.
"""

from __future__ import annotations

from dataclasses import dataclass

SEVERITIES = ("high", "medium", "low")  # most severe first
SEVERITY_RANK = {severity: rank for rank, severity in enumerate(SEVERITIES)}


@dataclass(frozen=True)
class FlagReason:
    """One code. ``severities``: those its rule gives, most severe first (one unless the rule
    picks per run); ``recommendation``: None when the rule words it per run."""

    code: str
    severities: tuple[str, ...]
    summary: str
    recommendation: str | None


FLAG_REASONS: tuple[FlagReason, ...] = (
    FlagReason(
        "ZERO_UTIL",
        ("high",),
        "the GPUs did no work",
        "The GPUs did no work: cancel idle jobs and check that the code really runs on the GPU.",
    ),
    FlagReason(
        "LOW_UTIL",
        ("high", "medium"),
        "the GPUs were busy only a small share of the time",
        "Request fewer GPUs or a smaller share, or give each GPU more work (larger batches, more tasks per GPU).",
    ),
    FlagReason(
        "MEMORY_HELD_IDLE",
        ("high",),
        "GPU memory held while the GPUs stayed near idle",
        "Release GPUs when idle, or use a smaller share.",
    ),
    FlagReason(
        "BUSY_ENGINE_IDLE_SMS",
        ("medium",),
        "the engine reads busy while the SMs stay idle",
        "The GPU looks busy but does almost no work: tiny kernels or serial code. "
        "Batch the work into larger kernels, or run it on CPUs.",
    ),
    FlagReason(
        "INPUT_BOUND",
        ("medium",),
        "compute bursts between idle gaps: the GPU waits for input",
        "The GPU waits for input between bursts: check the data loader / CPU count "
        "(more loader workers and CPU cores, pinned memory, faster storage).",
    ),
    FlagReason("OVERSIZED", ("low",), "a whole GPU or MIG slice where a smaller MIG slice would do", None),
    FlagReason(
        "IDLE_TAIL",
        ("medium",),
        "idle hours at the end of the job",
        "End the job when its work is done: look for waits after the last step "
        "(sleep, hung process, interactive session left open) and set a tighter time limit.",
    ),
    FlagReason(
        "DEBUG_OVER_LIMIT",
        ("medium",),
        "the debug partition used too long or by too many jobs at once",
        "Use the debug partition for short tests, a few at a time; run long or many jobs in the regular partitions.",
    ),
    FlagReason(
        "MULTINODE_FRAGMENTED",
        ("low",),
        "GPUs spread over more NVLink domains or switch groups than the free GPUs at its start needed",
        None,
    ),
)
REASONS = tuple(reason.code for reason in FLAG_REASONS)  # a run's reasons are listed in this order
REASON_RANK = {code: rank for rank, code in enumerate(REASONS)}
_BY_CODE = {reason.code: reason for reason in FLAG_REASONS}


def flag_reason(code: str) -> FlagReason:
    """The registry entry of ``code``; an unknown code is an error naming the known ones."""
    try:
        return _BY_CODE[code]
    except KeyError:
        raise KeyError(
            f"flag reason {code!r} is not in contracts/flags.py FLAG_REASONS "
            f"(known: {', '.join(REASONS)}): add its entry there"
        ) from None
