"""What cardhours does with each impossible or inconsistent Slurm record: one registry.

Every policy has a code; quarantine reasons start with it (``END_BEFORE_START: ...``), the
docs table (docs/slurm.md, checked by a test) lists every row, and the CLI and the review count
quarantined rows by it. A bad row never blocks the month: it is quarantined, counted and
shown; only a day whose quarantined share exceeds ``slurm.max_quarantine_share`` fails.
"""

from __future__ import annotations

from typing import NamedTuple


class Policy(NamedTuple):
    record: str  # what the record looks like
    action: str  # "quarantined", "repaired", "billed with an inferred end", "staged with a warning"
    detail: str  # what exactly happens and why


MAX_GPU_COUNT = 1_000_000
MAX_NODE_COUNT = 100_000

POLICIES: dict[str, Policy] = {
    "SHORT_LINE": Policy(
        "a `--parsable2` line with fewer fields than the header (or with surplus fields that cannot be "
        "placed because the file has free-text columns besides JobName)",
        "quarantined",
        "the line (and its bytes, base64, when not UTF-8) is kept in the payload",
    ),
    "JOB_NAME_DELIMITER": Policy(
        "a JobName holding `|`",
        "repaired",
        "the fixed fields are counted from both ends; the surplus is the job name; `read_note` says so",
    ),
    "NOT_UTF8": Policy(
        "bytes that are not UTF-8 in any field",
        "repaired",
        "decoded with U+FFFD replacements; the original bytes stay in `raw.slurm_sacct.raw_line`",
    ),
    "UNPARSABLE_FIELD": Policy(
        "a time, job id, node count, time limit, host list or TRES that cannot be parsed",
        "quarantined",
        "the reason names the field and the value",
    ),
    "ABSURD_COUNT": Policy(
        f"a GPU count above {MAX_GPU_COUNT:,} (e.g. `gres/gpu=99999999999`) or a node count above {MAX_NODE_COUNT:,}",
        "quarantined",
        "no cluster has that many; the value is named",
    ),
    "START_MISSING": Policy(
        "Start `None`/`Unknown` on a job that ran (COMPLETED, FAILED, TIMEOUT, OUT_OF_MEMORY, or ElapsedRaw > 0)",
        "quarantined",
        "it cannot be billed without a start; billing 0 would hide it",
    ),
    "END_BEFORE_START": Policy("End earlier than Start", "quarantined", "both times are named"),
    "GPUS_OVER_NODES": Policy(
        "more GPUs than its nodes hold (NNodes x the largest node of the cluster's inventory)",
        "quarantined",
        "the GPUs, nodes and capacity are named",
    ),
    "RUNAWAY_END_UNKNOWN": Policy(
        "a terminal state (CANCELLED, COMPLETED, FAILED...) with End `Unknown`: a slurmdbd runaway job",
        "billed with an inferred end",
        "billed up to the earliest of Start + its time limit, the last DCGM sample carrying its "
        "`hpc_job` label (+ one sample step), and the end of the month it started in; "
        "`end_inferred_from` says which, and the review lists it with that evidence",
    ),
    "UNKNOWN_STATE": Policy(
        "a state cardhours does not know (a newer Slurm's)",
        "staged with a warning",
        "billed as its times say; the run's warning and the review's data-quality section name it",
    ),
}

# sacct's job state codes (man sacct, JOB STATE CODES), as stg_slurm__jobs.state holds them.
KNOWN_STATES: tuple[str, ...] = (
    "BOOT_FAIL",
    "CANCELLED",
    "COMPLETED",
    "COMPLETING",
    "CONFIGURING",
    "DEADLINE",
    "FAILED",
    "NODE_FAIL",
    "OUT_OF_MEMORY",
    "PENDING",
    "PREEMPTED",
    "REQUEUED",
    "REQUEUE_FED",
    "REQUEUE_HOLD",
    "RESIZING",
    "RESV_DEL_HOLD",
    "REVOKED",
    "RUNNING",
    "SIGNALING",
    "SPECIAL_EXIT",
    "STAGE_OUT",
    "STOPPED",
    "SUSPENDED",
    "TIMEOUT",
)  # fmt: skip  (one line per group of eight reads better than one name per line)
# States after which a job's record does not change: an End of Unknown then means a runaway.
TERMINAL_STATES: tuple[str, ...] = (
    "BOOT_FAIL",
    "CANCELLED",
    "COMPLETED",
    "DEADLINE",
    "FAILED",
    "NODE_FAIL",
    "OUT_OF_MEMORY",
    "PREEMPTED",
    "TIMEOUT",
)  # fmt: skip  (as above)
# States only a job that started can reach.
RAN_STATES: tuple[str, ...] = ("COMPLETED", "FAILED", "OUT_OF_MEMORY", "TIMEOUT")


def reason(code: str, text: str) -> str:
    """A quarantine reason: the policy code, then what was found."""
    if code not in POLICIES:
        raise KeyError(f"unknown policy code {code!r}")
    return f"{code}: {text}"


def reason_code(text: str) -> str:
    """The policy code of a quarantine reason (the first one named; parse errors name a field)."""
    found = [(text.find(f"{code}: "), code) for code in POLICIES if f"{code}: " in text]
    if found:
        return min(found)[1]
    return "SHORT_LINE" if text.startswith("line has ") else "UNPARSABLE_FIELD"
