"""A job report (reports/job_report.py) as rich renderables for the terminal: short, plain words.

Every text from the data (job names, users, accounts, flag evidence) is placed as rich ``Text``,
never as markup, so a job named ``[red]x`` prints as that text.
"""

from __future__ import annotations

from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from reports.fmt import NA, fmt_float, fmt_int, fmt_pct, fmt_trimmed

MAX_FLAGS, MAX_RUNS, MAX_GPUS = 8, 40, 64  # the terminal shows these many; --json has every one
SMALL = 0.005  # a GPU line under this share of the job's sampled GPU-hours is counted, not shown
SIGNAL_NAMES = {"sm_active": "SM active", "gr_engine_active": "GR engine active", "gpu_util": "GPU util"}


def render_job_report(report: dict[str, Any]) -> RenderableType:
    """The report: who/what, GPUs and efficiency, flags, runs and per-GPU lines."""
    parts: list[RenderableType] = [
        Text(f"Job {report['job_id'] or report['query']} on cluster {report['cluster']}", style="bold")
    ]
    parts.append(Text(report["kind"]))
    parts.append(_facts(report))
    several = len(report["runs"]) > 1
    if report["flags"]:
        shown = report["flags"][:MAX_FLAGS]
        parts += [Text("Flags", style="bold"), *(_flag(f, several) for f in shown)]
        parts += _more(len(report["flags"]) - len(shown), "flags")
    else:
        parts.append(Text("Flags: none (no waste rule fired for this job)"))
    if several:
        parts += [Text("Runs", style="bold"), _runs(report["runs"][:MAX_RUNS], report["currency"])]
        parts += _more(len(report["runs"]) - MAX_RUNS, "runs")
    if len(report["gpus"]) > 1:
        lines = _main_gpus(report["gpus"])
        parts += [Text("Per GPU", style="bold"), _gpus(lines[:MAX_GPUS], several)]
        parts += _more(
            len(report["gpus"]) - len(lines[:MAX_GPUS]),
            f"GPU lines (under {SMALL:.1%} of the sampled GPU-hours each, or past {MAX_GPUS})",
        )
    return Group(*parts)


def _main_gpus(gpus: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The GPU lines holding at least SMALL of the job's sampled GPU-hours: a run tied by host
    (``host_shared``) also gets tiny shares of the host's other GPUs' samples."""
    total = sum(g["gpu_hours"] or 0.0 for g in gpus)
    return [g for g in gpus if total <= 0 or (g["gpu_hours"] or 0.0) >= SMALL * total]


def _more(count: int, what: str) -> list[Text]:
    return [Text(f"  ... {count} more {what}: --json lists them all", style="dim")] if count > 0 else []


def _facts(report: dict[str, Any]) -> Table:
    totals, run = report["totals"], report["runs"][0]
    table = Table.grid(padding=(0, 2))
    table.add_column(style="dim")
    table.add_column()
    single = len(report["runs"]) == 1
    rows = [
        ("user", report["user_name"] or "n/a (Kubernetes records no user)"),
        ("account / department", f"{report['account']} / {report['department']}"),
        ("partition / QOS", f"{report['partition_name'] or NA} / {report['qos'] or NA}"),
        ("job name", report["job_name"]),
        ("state", run["state"] if single else ", ".join(sorted({r["state"] for r in report["runs"]}))),
        ("start -> end", f"{_time(report['first_start_time'])} -> {_time(report['last_end_time']) or 'running'}"),
        (
            "elapsed" + ("" if single else " (runs summed)"),
            _duration(sum(r["elapsed_seconds"] or 0 for r in report["runs"])),
        ),
        ("queue time" + ("" if single else " (longest run)"), _duration(totals["queue_seconds"]) + _queue_note(report)),
        ("GPUs", f"{fmt_trimmed(totals['gpus'], 3)} x {report['gpu_model'] or NA} on {_hosts(report)}"),
        ("GPU-hours", f"{fmt_float(totals['gpu_hours'], 2)} ({fmt_float(totals['idle_gpu_hours'], 2)} idle)"),
        ("utilization", _utilization(totals)),
        ("GPU memory", _memory(report)),
        (
            "power / energy",
            f"{fmt_int(totals['mean_power_w'])} W per GPU (mean), {fmt_float(totals['energy_kwh'], 2)} kWh",
        ),
        ("samples", _samples(report["runs"])),
        ("cost", f"{fmt_float(totals['cost'], 2)} {report['currency']}" if totals["cost"] is not None else NA),
    ]
    for label, value in rows:
        table.add_row(label, Text(str(value) if value is not None else NA))
    return table


def _flag(flag: dict[str, Any], several: bool) -> Text:
    run = f" (job {flag['job_id']}, run started {_time(flag['start_time'])})" if several else ""
    text = Text(f"  {flag['severity'].upper():<6} {flag['reason']}", style="bold yellow")
    text.append(f"{run}: {flag['summary'] or ''}\n", style="")
    text.append(f"         evidence: {flag['detail'] or NA}\n")
    text.append(f"         wasted: {fmt_float(flag['wasted_gpu_hours'], 2)} GPU-hours\n")
    text.append(f"         what to do: {flag['recommendation']}")
    return text


def _runs(runs: list[dict[str, Any]], currency: str) -> Table:
    table = Table("job id", "start", "end", "state", "GPUs", "GPU-hours", "util", "energy kWh", f"cost {currency}")
    for run in runs:
        cells = (
            run["job_id"],
            _time(run["start_time"]) or NA,
            _time(run["end_time"]) or "running",
            run["state"],
            fmt_trimmed(run["gpus"], 3),
            fmt_float(run["gpu_hours"], 2),
            fmt_pct(run["utilization"]),
            fmt_float(run["energy_kwh"], 2),
            fmt_float(run["cost"], 2),
        )  # fmt: skip (one row, read as a row)
        table.add_row(*(Text(str(cell)) for cell in cells))
    return table


def _gpus(gpus: list[dict[str, Any]], several: bool) -> Table:
    table = Table(
        *(("run start",) if several else ()),
        "host",
        "GPU",
        "GPU-hours",
        "util",
        "signal",
        "memory peak / card GiB",
        "energy kWh",
        "power W",
    )
    for line in gpus:
        gpu = str(line["gpu"]) + (f" {line['mig_profile']}" if line["mig_profile"] else "")
        memory = f"{_gib(line['peak_fb_used_mib'])} / {_gib(line['card_memory_mib'])}"
        cells = (
            *((_time(line["start_time"]),) if several else ()),
            line["hostname"],
            gpu,
            fmt_float(line["gpu_hours"], 2),
            fmt_pct(line["utilization"]),
            SIGNAL_NAMES.get(line["utilization_signal"], NA),
            memory,
            fmt_float(line["energy_kwh"], 2),
            fmt_int(line["mean_power_w"]),
        )  # fmt: skip (one row, read as a row)
        table.add_row(*(Text(str(cell)) for cell in cells))
    return table


def _utilization(totals: dict[str, Any]) -> str:
    if totals["utilization"] is None:
        return "n/a (no DCGM samples were tied to this job)"
    names = " + ".join(SIGNAL_NAMES.get(s, s) for s in (totals["utilization_signal"] or "").split(",") if s)
    return f"{fmt_pct(totals['utilization'])} by {names}"


def _queue_note(report: dict[str, Any]) -> str:
    if report["scheduler"] != "kubernetes":
        return ""
    kueue = "; Kueue's wait before admission is not in it" if report["partition_name"] else ""
    return f" (first pod created -> last pod scheduled{kueue})"


def _samples(runs: list[dict[str, Any]]) -> str:
    """How much of the expected DCGM samples the job has, and how they were tied to it."""
    methods = ", ".join(sorted({r["attribution_method"] or NA for r in runs}))
    coverage = runs[0]["sample_coverage"] if len(runs) == 1 else None
    return (f"{fmt_pct(coverage, 0)} of the expected, " if coverage is not None else "") + f"tied by {methods}"


def _memory(report: dict[str, Any]) -> str:
    """``peak 30.1 GiB (38%), mean 20.0 GiB (25%) of the 79.6 GiB of one GPU`` (mean: one run only)."""
    totals, runs = report["totals"], report["runs"]
    card, peak = totals["card_memory_mib"], totals["peak_fb_used_mib"]
    mean = runs[0]["mean_fb_used_mib"] if len(runs) == 1 else None
    parts = [f"{label} {_gib(value)} GiB" + (f" ({fmt_pct(value / card, 0)})" if card else "")
             for label, value in (("peak", peak), ("mean", mean)) if value is not None]  # fmt: skip
    unit = "one MIG instance" if any(g["mig_profile"] for g in report["gpus"]) else "one GPU"
    return (", ".join(parts) or NA) + (f" of the {_gib(card)} GiB of {unit}" if card else "")


def _hosts(report: dict[str, Any]) -> str:
    hosts = sorted({h for r in report["runs"] for h in (r["hosts"] or "").split(",") if h})
    return f"{len(hosts)} host{'s' if len(hosts) != 1 else ''} ({', '.join(hosts)})" if hosts else "no host"


def _gib(mib: float | None) -> str:
    return fmt_float(None if mib is None else mib / 1024, 1)


def _time(value: str | None) -> str | None:
    return value.replace("T", " ")[:16] if value else None


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return NA
    minutes = round(seconds / 60)
    return (
        f"{minutes // 1440}d {minutes % 1440 // 60}h {minutes % 60:02d}m"
        if minutes >= 1440
        else f"{minutes // 60}h {minutes % 60:02d}m"
    )
