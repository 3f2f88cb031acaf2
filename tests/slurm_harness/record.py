"""Record real sacct output of the job mix into tests/fixtures/sacct/ (see its README.md).

    .venv/bin/python -m tests.slurm_harness.record tests/fixtures/sacct

Writes ``real_22.05_busy.txt`` (the same query while all 8 GPUs are busy and the queued
jobs pend: running rows with ``End=Unknown``, pending rows, the pending array range),
``real_22.05_mix.txt`` (``sacct --parsable2 --allusers --duplicates --format=<SACCT_FORMAT>
-S <began> -E <ended> -M cardhours-test``, with its header line, as cardhours' file mode reads
it), ``real_22.05_held_cancelled.txt`` (``sacct -j`` of the held job cancelled before it was
eligible, which no window query returns) and ``real_22.05_mix.json`` (what was submitted:
job ids, GPUs, accounts, expected states, and the window).
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict
from datetime import UTC, datetime, timedelta
from pathlib import Path

from contracts.schemas import SACCT_FORMAT
from tests.slurm_harness.cluster import SlurmCluster
from tests.slurm_harness.jobs import MIX, JobMix, run_mix

TIME_FORMAT = "%Y-%m-%dT%H:%M:%S"


def record(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    common = ["--parsable2", "--allusers", "--duplicates", f"--format={SACCT_FORMAT}"]
    with SlurmCluster() as cluster:

        def window(began: datetime, ended: datetime) -> list[str]:
            return ["-S", began.strftime(TIME_FORMAT), "-E", ended.strftime(TIME_FORMAT), "-M", cluster.cluster_name]

        def busy(mix: JobMix) -> None:
            now = datetime.now(UTC).replace(tzinfo=None, microsecond=0) + timedelta(seconds=1)
            (out / "real_22.05_busy.txt").write_text(cluster.sacct([*common, *window(mix.began, now)]))

        mix = run_mix(cluster, while_busy=busy)
        assert mix.ended
        (out / "real_22.05_mix.txt").write_text(cluster.sacct([*common, *window(mix.began, mix.ended)]))
        held = cluster.sacct([*common, "-j", mix.ids["cancelled-held"]])
        (out / "real_22.05_held_cancelled.txt").write_text(held)
        version = cluster.command("sacct", ["--version"]).stdout.strip()
        manifest = {
            "slurm_version": version,
            "cluster": cluster.cluster_name,
            "window": [mix.began.strftime(TIME_FORMAT), mix.ended.strftime(TIME_FORMAT)],
            "jobs": [asdict(spec) | {"job_id": mix.ids[spec.name]} for spec in MIX],
        }
        (out / "real_22.05_mix.json").write_text(json.dumps(manifest, indent=2) + "\n")


if __name__ == "__main__":
    record(Path(sys.argv[1] if len(sys.argv) > 1 else "tests/fixtures/sacct"))
