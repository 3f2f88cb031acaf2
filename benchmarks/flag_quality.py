"""Precision and recall of the review's flags against the simulator's truth.

    .venv/bin/cardhours demo --out /tmp/demo
    .venv/bin/python benchmarks/flag_quality.py /tmp/demo            # markdown tables
    .venv/bin/python benchmarks/flag_quality.py /tmp/demo --json     # the numbers as JSON

DIR is a simulated site whose month was built (``cardhours demo``, or ``cardhours simulate``
then ``cardhours run``): its ``cardhours.toml``, ``truth.parquet`` (Slurm runs),
``truth_pods.parquet`` (Kubernetes pods, when the site has a pool) and the marts
``fct_job_usage`` and ``fct_job_flags`` as Parquet in the lake. Each run of the mart is matched
to the workload kind it was built with; ``simulate/expected_flags.py`` declares the reasons each
kind should draw. Per reason:

- precision: flagged runs whose kind expects the reason / flagged runs;
- recall: judgeable runs of those kinds flagged with it / judgeable runs of those kinds, where
  judgeable is what the rule can see: at least ``min_runtime_minutes`` held in the month (for
  OVERSIZED also one GPU or one MIG slice above 1g; for IDLE_TAIL a run that ended in the
  month with a built tail surely longer than ``idle_tail_hours``).

Also the share of runs flagged and the false alarm rate: judgeable runs of a healthy kind
flagged, by any reason and by the workload reasons only (not the debug partition's policy or
the placement, which no kind decides).
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import date
from pathlib import Path

import polars as pl

from config.errors import ConfigError
from config.load import load_config
from config.policy import FlagsConfig
from contracts.flags import REASONS
from simulate.expected_flags import (
    HEALTHY_KINDS,
    POLICY_REASONS,
    SIZE_REASON,
    SMALLEST_MIG_PREFIX,
    TAIL_REASON,
    kinds_expecting,
)
from simulate.shapes import TAIL_MAX_FRACTION, TAIL_MIN_S

RUN_KEY = ["cluster", "job_id_raw", "start_time"]


def _truth_slurm(sim: Path) -> pl.DataFrame:
    t = pl.read_parquet(sim / "truth.parquet")
    return t.select(
        "cluster",
        "job_id_raw",
        "start_time",
        "kind",
        "gpus",
        "mig_profile",
        pl.when(pl.col("gpus") > 0).then(pl.col("gpu_seconds") / pl.col("gpus")).otherwise(0.0).alias("held_s"),
        pl.col("end_time").is_not_null().alias("ended"),
    )


def _truth_kube(sim: Path) -> pl.DataFrame:
    """One row per Kubernetes job key (a gang's pods share their kind)."""
    path = sim / "truth_pods.parquet"
    if not path.exists():
        return pl.DataFrame()
    pods = pl.read_parquet(path)
    held = pl.when(pl.col("gpus") > 0).then(pl.col("gpu_seconds") / pl.col("gpus")).otherwise(0.0)
    return pods.group_by("cluster", pl.col("job_key").alias("job_id_raw")).agg(
        pl.col("kind").first(),
        pl.col("gpus").sum(),
        pl.col("mig_profile").first(),
        held.max().alias("held_s"),
        pl.col("end_time").is_not_null().all().alias("ended"),
    )


def _marts(lake: Path, month: date) -> tuple[pl.DataFrame, pl.DataFrame]:
    part = f"month={month.isoformat()}"
    usage = pl.read_parquet(lake / "marts" / "fct_job_usage" / part)
    flags = pl.read_parquet(lake / "marts" / "fct_job_flags" / part)
    return usage, flags


def runs_with_truth(sim: Path, month: date) -> tuple[pl.DataFrame, FlagsConfig]:
    """Every run of the month's fct_job_usage with its kind, truth and reasons (a list)."""
    config = load_config(sim / "cardhours.toml")
    usage, flags = _marts(config.warehouse.lake, month)
    reasons = flags.group_by(RUN_KEY).agg(pl.col("reason").unique().alias("reasons"))
    usage = usage.select(*RUN_KEY, "scheduler", "gpu_hours").join(reasons, on=RUN_KEY, how="left", nulls_equal=True)
    slurm = usage.filter(pl.col("scheduler") == "slurm").join(
        _truth_slurm(sim), on=RUN_KEY, how="left", nulls_equal=True
    )
    kube_truth = _truth_kube(sim)
    kube = usage.filter(pl.col("scheduler") != "slurm")
    if kube.height:
        kube = kube.join(kube_truth, on=["cluster", "job_id_raw"], how="left")
    runs = pl.concat([slurm, kube], how="diagonal_relaxed") if kube.height else slurm
    return runs.with_columns(pl.col("reasons").fill_null(pl.lit([], pl.List(pl.String)))), config.flags


def _long_enough(t: FlagsConfig) -> pl.Expr:
    """Runs held at least ``min_runtime_minutes`` (by the truth) that the month measured."""
    return (pl.col("held_s") >= t.min_runtime_minutes * 60.0) & (pl.col("gpu_hours") > 0)


def _judgeable(reason: str, t: FlagsConfig) -> pl.Expr:
    """Runs the rule for ``reason`` can judge, by the simulator's truth."""
    long_enough = _long_enough(t)
    if reason == SIZE_REASON:
        one_gpu = pl.col("mig_profile").is_null() & (pl.col("gpus") == 1.0)
        big_slice = pl.col("mig_profile").is_not_null() & ~pl.col("mig_profile").str.starts_with(SMALLEST_MIG_PREFIX)
        return long_enough & (one_gpu | big_slice)
    if reason == TAIL_REASON:
        # The built tail is min(2-6 h, TAIL_MAX_FRACTION x held): surely above the threshold when
        # half the run is. A run held exactly twice the threshold (a 4 h TIMEOUT) has a tail of
        # exactly the threshold, which the samples' resolution puts on either side: not judged.
        limit = t.idle_tail_hours * 3600.0
        return pl.col("ended") & (TAIL_MIN_S >= limit) & (TAIL_MAX_FRACTION * pl.col("held_s") > limit)
    return long_enough


def _ratio(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


def score(runs: pl.DataFrame, t: FlagsConfig) -> dict:
    """Per reason: flagged, precision, recall; overall: shares flagged and the false alarm rate."""
    per_reason = []
    for reason in REASONS:
        has = pl.col("reasons").list.contains(reason)
        kinds = kinds_expecting(reason)
        expected = pl.col("kind").is_in(kinds)
        eligible = runs.filter(expected & _judgeable(reason, t))
        by_kind = runs.filter(has).group_by("kind").len().sort("len", "kind", descending=[True, False])
        row = {
            "reason": reason,
            "flagged": runs.filter(has).height,
            "flagged_by_kind": dict(by_kind.iter_rows()),
            "on_healthy": runs.filter(has & pl.col("kind").is_in(HEALTHY_KINDS)).height,
            "kinds": list(kinds),
        }
        if reason not in POLICY_REASONS:
            row["precision"] = _ratio(runs.filter(has & expected).height, row["flagged"])
            row["recall"] = _ratio(eligible.filter(has).height, eligible.height)
            row["judgeable"] = eligible.height
        per_reason.append(row)
    flagged = pl.col("reasons").list.len() > 0
    workload = pl.col("reasons").list.set_difference(pl.lit(list(POLICY_REASONS))).list.len() > 0
    healthy = runs.filter(pl.col("kind").is_in(HEALTHY_KINDS) & _long_enough(t))
    started = runs.filter(pl.col("gpu_hours") > 0)
    kinds = (
        runs.group_by("kind")
        .agg(pl.len().alias("runs"), flagged.sum().alias("flagged"))
        .sort("runs", descending=True)
        .to_dicts()
    )
    return {
        "runs": runs.height,
        "runs_flagged": runs.filter(flagged).height,
        "started_runs": started.height,
        "started_flagged": started.filter(flagged).height,
        "unmatched_runs": runs.filter(pl.col("kind").is_null()).height,
        "healthy_judgeable": healthy.height,
        "false_alarm_rate": _ratio(healthy.filter(flagged).height, healthy.height),
        "false_alarm_rate_workload": _ratio(healthy.filter(workload).height, healthy.height),
        "reasons": per_reason,
        "kinds": kinds,
    }


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f} %"


def markdown(result: dict) -> str:
    share = _pct(_ratio(result["runs_flagged"], result["runs"]))
    lines = [
        f"runs {result['runs']:,}, flagged {result['runs_flagged']:,} ({share}); "
        f"started {result['started_runs']:,}, flagged {result['started_flagged']:,}; "
        f"without truth {result['unmatched_runs']}",
        f"healthy runs judged {result['healthy_judgeable']:,}: false alarm rate {_pct(result['false_alarm_rate'])} "
        f"(workload reasons only: {_pct(result['false_alarm_rate_workload'])})",
        "",
        "| reason | flagged | precision | recall (judgeable) | on healthy runs | kinds built to draw it "
        "| flagged runs by kind |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in result["reasons"]:
        recall = f"{_pct(r['recall'])} ({r['judgeable']:,})" if "recall" in r else "- (policy)"
        lines.append(
            f"| {r['reason']} | {r['flagged']:,} | {_pct(r.get('precision'))} | {recall} | {r['on_healthy']} | "
            f"{', '.join(r['kinds']) or '-'} | {', '.join(f'{k} {n:,}' for k, n in r['flagged_by_kind'].items())} |"
        )
    lines += ["", "| kind | runs | flagged |", "|---|---|---|"]
    lines += [f"| {k['kind']} | {k['runs']:,} | {_pct(_ratio(k['flagged'], k['runs']))} |" for k in result["kinds"]]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("site", type=Path, help="the simulated site's directory (cardhours.toml, truth.parquet)")
    parser.add_argument("--month", default="2026-10", help="the built month, YYYY-MM (default: the demo's)")
    parser.add_argument("--json", action="store_true", help="print the numbers as JSON")
    args = parser.parse_args(argv)
    month = date.fromisoformat(args.month + "-01")
    try:
        runs, thresholds = runs_with_truth(args.site, month)
    except (FileNotFoundError, ConfigError) as exc:
        print(f"flag_quality: {exc}: build the month first (cardhours demo --out {args.site})", file=sys.stderr)
        return 1
    result = score(runs, thresholds)
    print(json.dumps(result, indent=1, default=str) if args.json else markdown(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
