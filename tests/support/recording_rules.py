"""The shipped recording rules evaluated over back-filled history, the way a site back-fills them.

Prometheus evaluates recording rules only forward, from the moment it loads them; history gets
them from ``promtool tsdb create-blocks-from rules``, which evaluates each rule with range
queries against a running server and writes the results as blocks. A rule reading another
rule's series needs that series in the server first, so ``recorded_history`` back-fills in
passes (``rule_passes``): the rules of a pass read raw series or series recorded by earlier
passes; after each pass a server is started again over the raw blocks plus every recorded block.

promtool times a group's evaluations by a hash of its name and its file's path (as Prometheus
staggers groups), so every pass is written to the same path under the same group name: all
rules are then evaluated at the same instants, as the one group of the shipped file is live.
With another name or path a later pass is evaluated at another offset within the interval
and, where that offset is earlier, reads the previous point of the series it builds on.

``extra_args`` go to every server, e.g. ``--query.lookback-delta``: back-filled series carry
no staleness markers, so with the default 5-minute lookback an ended series (a job's, when
``hpc_job`` changes) is carried for up to 5 minutes after its last sample.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

import yaml

from cardhours.bench.prometheus_server import PrometheusHarnessError, PrometheusServer, binary

RULES = Path(__file__).resolve().parents[2] / "deploy" / "prometheus" / "cardhours-rules.yml"
RULE_TESTS = Path(__file__).resolve().parents[1] / "fixtures" / "prometheus" / "cardhours-rules.test.yml"


def recording_rules(path: Path = RULES) -> list[dict]:
    """Every recording rule of the file (``record``, ``expr``), in file order."""
    groups = yaml.safe_load(path.read_text())["groups"]
    return [rule for group in groups for rule in group["rules"] if "record" in rule]


def rule_passes(rules: Sequence[dict]) -> list[list[dict]]:
    """The rules in back-fill passes: a rule goes in the first pass after those of every
    recorded series its expression reads."""
    names = {rule["record"] for rule in rules}
    level: dict[str, int] = {}
    remaining = list(rules)
    while remaining:
        ready = [r for r in remaining if all(n in level for n in _reads(r["expr"], names))]
        if not ready:
            raise ValueError(f"recording rules read each other in a cycle: {[r['record'] for r in remaining]}")
        for rule in ready:
            level[rule["record"]] = 1 + max((level[n] for n in _reads(rule["expr"], names)), default=-1)
            remaining.remove(rule)
    return [[r for r in rules if level[r["record"]] == k] for k in range(max(level.values()) + 1)]


def _reads(expr: str, names: set[str]) -> set[str]:
    return {name for name in names if re.search(rf"(?<![\w:]){re.escape(name)}(?![\w:])", expr)}


def backfill_rules(
    rules: Sequence[dict], rule_file: Path, url: str, start: datetime, end: datetime, interval_s: int, out: Path
) -> None:
    """``promtool tsdb create-blocks-from rules`` of ``rules`` over [start, end) into ``out``,
    written to ``rule_file`` as one group named as the shipped file's."""
    out.mkdir(parents=True)
    (group,) = yaml.safe_load(RULES.read_text())["groups"]
    rule_file.write_text(yaml.safe_dump({"groups": [{"name": group["name"], "rules": list(rules)}]}))
    command = [
        binary("promtool"),
        "tsdb",
        "create-blocks-from",
        "rules",
        f"--url={url}",
        f"--start={start.isoformat()}Z",
        f"--end={end.isoformat()}Z",
        f"--eval-interval={interval_s}s",
        f"--output-dir={out}",
        str(rule_file),
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    out.with_suffix(".log").write_text(done.stdout + done.stderr)
    # promtool logs a range query's warnings and goes on: a back-fill with gaps is not one to compare.
    if done.returncode != 0 or "level=warn" in done.stderr or "level=error" in done.stderr:
        raise PrometheusHarnessError(f"{' '.join(command)} failed (exit {done.returncode}):\n{done.stderr.strip()}")


@contextmanager
def recorded_history(
    raw_blocks: Path,
    workdir: Path,
    start: datetime,
    end: datetime,
    interval_s: int,
    extra_args: Sequence[str] = (),
) -> Iterator[str]:
    """A server over ``raw_blocks`` plus the shipped rules back-filled over [start, end) at
    ``interval_s``; yields its URL. Naive datetimes are UTC."""
    data = workdir / "data"
    shutil.copytree(raw_blocks, data)
    for k, rules in enumerate(rule_passes(recording_rules())):
        with PrometheusServer(data, workdir / f"server-{k}", extra_args=extra_args) as server:
            backfill_rules(rules, workdir / RULES.name, server.url, start, end, interval_s, workdir / f"pass-{k}")
        for block in (workdir / f"pass-{k}").iterdir():
            shutil.copytree(block, data / block.name)
    with PrometheusServer(data, workdir / "server", extra_args=extra_args) as server:
        yield server.url
