"""Job processes left behind by the test cluster, found by their ``SLURM_CONF``.

slurmd double-forks ``slurmstepd`` (re-parented to PID 1), so stopping slurmd does not stop
running jobs. slurmstepd and the job scripts inherit ``SLURM_CONF=<workdir>/etc/slurm.conf``
(the harness passes it to slurmd and sbatch), which names this cluster's processes and no
one else's. Zombies (``State: Z`` in /proc/PID/status) count as gone: PID 1 reaps them, or
not, and ``kill -0`` would still succeed on them.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from tests.slurm_harness.procs import is_running


def cluster_pids(slurm_conf: Path) -> list[int]:
    """Live processes whose environment has ``SLURM_CONF=<slurm_conf>`` (not this process)."""
    marker = f"SLURM_CONF={slurm_conf}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        if marker in environ.split(b"\0") and is_running(int(entry.name)):
            found.append(int(entry.name))
    return found


def stop_strays(slurm_conf: Path, grace: float = 5.0) -> list[int]:
    """SIGTERM, then SIGKILL after ``grace`` seconds, this cluster's leftover processes."""
    pids = cluster_pids(slurm_conf)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and any(is_running(p) for p in pids):
            time.sleep(0.1)
        pids = [p for p in pids if is_running(p)]
        if not pids:
            break
    return pids
