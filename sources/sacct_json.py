"""``sacct --json`` (Slurm 21.08+) read into the same raw rows as ``--parsable2``.

The JSON is structured, so nothing a user types can shift a field. Each job becomes one
allocation row and one row per step, every field rendered as ``--parsable2`` prints it
(times ``YYYY-MM-DDTHH:MM:SS`` UTC or ``Unknown``, TRES ``type/name=count``), so staging
cannot tell the two apart. ``line_no`` is the job's position in ``jobs`` (1-based; its steps
share it). Numbers written the newer way (``{"set": true, "infinite": false, "number": N}``,
Slurm 23.02+) are read too. Where 22.05's JSON says less than ``--parsable2`` (who
cancelled, the exit code of a failed script, nodes of a job never started) docs/slurm.md
lists the differences.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

__all__ = ["JsonError", "json_rows", "repair_text"]

_TIME = "%Y-%m-%dT%H:%M:%S"
_ESCAPED = re.compile("[\udc80-\udcff]")  # bytes that were not UTF-8, as surrogateescape left them


class JsonError(ValueError):
    """The document is not sacct --json output; the message says what is wrong."""


def _number(value: Any) -> int | None:
    """An int from 22.05's plain number or 23.02+'s ``{set, infinite, number}`` object."""
    if isinstance(value, dict):
        if not value.get("set", True) or value.get("infinite"):
            return None
        value = value.get("number")
    return None if value is None or isinstance(value, bool) else int(value)


def _time(value: Any) -> str:
    seconds = _number(value)
    if not seconds:
        return "Unknown"
    return datetime.fromtimestamp(seconds, UTC).strftime(_TIME)


def _limit(value: Any) -> str:
    minutes = _number(value)
    if minutes is None:
        return "UNLIMITED"
    days, rest = divmod(minutes, 24 * 60)
    return f"{days}-{rest // 60:02d}:{rest % 60:02d}:00"


def _tres(items: list[dict] | None) -> str:
    parts = []
    for item in items or []:
        count = _number(item.get("count"))
        if count is None:
            continue
        name = item.get("name")
        parts.append(f"{item['type']}/{name}={count}" if name else f"{item['type']}={count}")
    return ",".join(parts)


def _state(job: dict) -> str:
    current = job.get("state", {}).get("current") if isinstance(job.get("state"), dict) else job.get("state")
    text = " ".join(current) if isinstance(current, list) else str(current or "")
    killer = job.get("kill_request_user")
    return f"{text} by {killer}" if text == "CANCELLED" and killer else text


def _exit_code(code: Any) -> str:
    if not isinstance(code, dict):
        return ""
    signal = code.get("signal", {}).get("signal_id") if isinstance(code.get("signal"), dict) else None
    return f"{_number(code.get('return_code')) or 0}:{_number(signal) or 0}"


def _job_id(job: dict) -> str:
    array, het = job.get("array") or {}, job.get("het") or {}
    task_id, task = _number(array.get("task_id")), array.get("task")
    if task_id is not None:
        return f"{_number(array.get('job_id'))}_{task_id}"
    if task:
        return f"{job['job_id']}_[{str(task).strip('[]')}]"
    if _number(het.get("job_offset")) is not None:
        return f"{_number(het.get('job_id'))}+{_number(het.get('job_offset'))}"
    return str(job["job_id"])


def _job_fields(job: dict) -> dict[str, str]:
    times = job.get("time") or {}
    return {
        "JobID": _job_id(job),
        "JobIDRaw": str(job["job_id"]),
        "JobName": job.get("name") or "",
        "User": job.get("user") or "",
        "Account": job.get("account") or "",
        "Partition": job.get("partition") or "",
        "QOS": job.get("qos") or "",
        "State": _state(job),
        "ExitCode": _exit_code(job.get("exit_code")),
        "Submit": _time(times.get("submission")),
        "Eligible": _time(times.get("eligible")),
        "Start": _time(times.get("start")),
        "End": _time(times.get("end")),
        "ElapsedRaw": str(_number(times.get("elapsed")) or 0),
        "Timelimit": _limit(times.get("limit")),
        "NNodes": str(_number(job.get("allocation_nodes")) or 0),
        "NodeList": job.get("nodes") or "",
        "AllocTRES": _tres((job.get("tres") or {}).get("allocated")),
        "ReqTRES": _tres((job.get("tres") or {}).get("requested")),
        "Cluster": job.get("cluster") or "",
    }


def _step_fields(job: dict, parent: dict[str, str], step: dict) -> dict[str, str]:
    times, nodes = step.get("time") or {}, step.get("nodes") or {}
    step_id = str((step.get("step") or {}).get("id", ""))
    state = step.get("state")
    return {
        **{name: "" for name in parent},
        "JobID": f"{parent['JobID']}.{step_id}",
        "JobIDRaw": f"{job['job_id']}.{step_id}",
        "JobName": (step.get("step") or {}).get("name") or "",
        "Account": parent["Account"],
        "State": " ".join(state) if isinstance(state, list) else str(state or ""),
        "ExitCode": _exit_code(step.get("exit_code")),
        "Submit": _time(times.get("start")),
        "Eligible": _time(times.get("start")),
        "Start": _time(times.get("start")),
        "End": _time(times.get("end")),
        "ElapsedRaw": str(_number(times.get("elapsed")) or 0),
        "NNodes": str(_number(nodes.get("count")) or 0),
        "NodeList": nodes.get("range") or "",
        "AllocTRES": _tres((step.get("tres") or {}).get("allocated")),
        "Cluster": parent["Cluster"],
    }


def _jobs(data: bytes, source: str) -> list[dict]:
    text = data.decode("utf-8", errors="surrogateescape")  # bytes that are not UTF-8 survive as surrogates
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise JsonError(f"{source}: not JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from exc
    if not isinstance(document, dict) or not isinstance(document.get("jobs"), list):
        raise JsonError(f"{source}: no 'jobs' list; expected the output of sacct --json")
    if document.get("errors"):
        raise JsonError(f"{source}: sacct reported errors: {json.dumps(document['errors'])[:500]}")
    return document["jobs"]


def json_rows(data: bytes, source: str) -> Iterator[tuple[int, dict[str, str] | None, str | None]]:
    """(job position, fields by sacct name or None, problem) per allocation and step row.

    A job entry that cannot be rendered yields (position, None, reason) instead of failing
    the document."""
    for position, job in enumerate(_jobs(data, source), start=1):
        try:
            fields = _job_fields(job)
            steps = [_step_fields(job, fields, step) for step in job.get("steps") or []]
        except (KeyError, TypeError, ValueError, AttributeError, OverflowError) as exc:
            yield position, None, f"job entry cannot be read ({type(exc).__name__}: {exc})"
            continue
        yield position, fields, None
        for step in steps:
            yield position, step, None


def repair_text(fields: dict[str, str]) -> tuple[dict[str, str], str | None, bytes | None]:
    """(fields, note, evidence): values that were not UTF-8 get U+FFFD replacements; the note
    names the fields and the evidence is their original bytes, ``|``-joined."""
    bad = {name: value for name, value in fields.items() if _ESCAPED.search(value)}
    if not bad:
        return fields, None, None
    raw = {name: value.encode("utf-8", "surrogateescape") for name, value in bad.items()}
    repaired = {**fields, **{name: data.decode("utf-8", errors="replace") for name, data in raw.items()}}
    note = f"not UTF-8 in {', '.join(bad)}; undecodable bytes replaced with U+FFFD"
    return repaired, note, b"|".join(raw.values())
