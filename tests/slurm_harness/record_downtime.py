"""Record the downtime scenario's outputs into tests/fixtures/slurm/downtime/ (see its README.md).

    .venv/bin/python -m tests.slurm_harness.record_downtime tests/fixtures/slurm/downtime

Writes every file ``downtime.collect`` returns and ``manifest.json`` (Slurm version, the
sreport window, each step's UTC start and end, the job ids).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.slurm_harness.cluster import SlurmCluster
from tests.slurm_harness.downtime import TIME_FORMAT, collect, roll_up, run_scenario


def record(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    with SlurmCluster() as cluster:
        run = run_scenario(cluster)
        roll_up(cluster, *run.window)
        outputs = collect(cluster, run)
        version = cluster.command("sreport", ["--version"]).stdout.strip()
    for name, text in outputs.items():
        (out / name).write_text(text)
    manifest = {
        "slurm_version": version,
        "cluster": cluster.cluster_name,
        "window": [t.strftime(TIME_FORMAT) for t in run.window],
        "steps": run.steps,
        "jobs": run.jobs,
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")


if __name__ == "__main__":
    record(Path(sys.argv[1] if len(sys.argv) > 1 else "tests/fixtures/slurm/downtime"))
