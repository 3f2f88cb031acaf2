"""``SlurmCluster``: a real one-node Slurm 22.05 with accounting, started from nothing.

    with SlurmCluster() as cluster:
        job = cluster.submit(["--gres=gpu:h200:2", "--wrap=sleep 3"])
        cluster.wait_done([job], timeout=60)
        print(cluster.sacct(["-j", job]))

Start order: munged (as ``munge``) -> MariaDB (fresh datadir, as ``mysql``) -> slurmdbd ->
``sacctmgr`` cluster/accounts/users -> slurmctld -> ``slurmd -N localhost`` -> node idle.
Stop is the reverse (jobs cancelled first, leftover job processes killed by pid). Every file
is under a temp workdir (kept when ``keep=True``, ``CARDHOURS_KEEP_SLURM=1`` or an error);
every command gets ``SLURM_CONF`` (and ``TZ=UTC``) through ``self.env``. slurmctld, slurmd,
slurmdbd and mariadbd listen on free 127.0.0.1 ports picked at start; munged and mariadbd
on unix sockets in the workdir. Slurm daemons run as root (``SlurmUser=root``), jobs too:
the departments are told apart by ``--account``.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from types import TracebackType

from tests.slurm_harness import config
from tests.slurm_harness.mariadb import SLURM_DB_NAME, SLURM_DB_PASSWORD, SLURM_DB_USER, start_mariadb
from tests.slurm_harness.munge import check_munge, start_munged
from tests.slurm_harness.procs import Daemon, HarnessError, binary, free_port, run, wait_until
from tests.slurm_harness.stray import stop_strays

DEFAULT_ACCOUNTS = ("vis-train", "nlp-pretrain", "legacy-ml")
# Job states after which a job (or its latest run) will not change any more.
FINAL_STATES = {
    "COMPLETED",
    "FAILED",
    "CANCELLED",
    "TIMEOUT",
    "OUT_OF_MEMORY",
    "NODE_FAIL",
    "PREEMPTED",
    "BOOT_FAIL",
    "DEADLINE",
}
SLURM_BINARIES = ("slurmctld", "slurmd", "slurmdbd", "sacct", "sacctmgr", "sbatch", "scontrol", "sinfo")


def _binary(name: str) -> str:
    return binary(name, package="slurmctld slurmd slurmdbd slurm-client")


class SlurmCluster:
    """A single-node Slurm with slurmdbd accounting; use as a context manager."""

    def __init__(self, accounts: Iterable[str] = DEFAULT_ACCOUNTS, keep: bool | None = None) -> None:
        self.accounts = tuple(accounts)
        self.keep = bool(os.environ.get("CARDHOURS_KEEP_SLURM")) if keep is None else keep
        self.cluster_name = config.CLUSTER_NAME
        self.daemons: list[Daemon] = []
        self.layout: config.Layout | None = None
        self.startup_seconds: float | None = None
        self.env: dict[str, str] = {}

    # --- lifecycle -----------------------------------------------------------------

    def __enter__(self) -> SlurmCluster:
        try:
            self.start()
        except BaseException:
            self.stop(failed=True)
            raise
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.stop(failed=kind is not None)

    def start(self) -> None:
        began = time.monotonic()
        if os.geteuid() != 0:
            raise HarnessError(
                "the Slurm harness runs as root: it starts munged and mariadbd under their "
                "own users and the Slurm daemons with SlurmUser=root"
            )
        for name in SLURM_BINARIES:
            _binary(name)
        root = Path(tempfile.mkdtemp(prefix="cardhours-slurm-"))
        os.chmod(root, 0o755)  # munge and mysql must reach their directories below it
        self.layout = layout = config.Layout(root)
        layout.make_dirs()
        munged, socket = start_munged(root)
        self.daemons.append(munged)
        check_munge(socket)
        db = start_mariadb(root)
        self.daemons.append(db.daemon)
        ports = config.Ports(free_port(), free_port(), free_port(), db.port)
        config.write_configs(layout, ports, socket, SLURM_DB_USER, SLURM_DB_PASSWORD, SLURM_DB_NAME)
        # No SLURM_* from the caller (a CI job inside Slurm would leak its job's settings).
        inherited = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
        self.env = {**inherited, "SLURM_CONF": str(layout.slurm_conf), "TZ": "UTC"}
        self._start_slurmdbd()
        self._add_associations()
        self._start_slurmctld()
        self._start_slurmd()
        self.startup_seconds = time.monotonic() - began

    def _daemon(self, name: str, argv: list[str], log: str) -> Daemon:
        assert self.layout is not None
        daemon = Daemon(name, argv, [self.layout.logs / f"{name}.console", self.layout.logs / log], env=self.env)
        self.daemons.append(daemon.start())
        return daemon

    def _start_slurmdbd(self) -> None:
        self._daemon("slurmdbd", [_binary("slurmdbd"), "-D"], "slurmdbd.log")

        def answers() -> bool:  # the first start creates the schema; sacctmgr answers after that
            return self.command("sacctmgr", ["-n", "-P", "list", "cluster"], check=False).returncode == 0

        wait_until("slurmdbd answers sacctmgr", answers, timeout=90, daemons=self.daemons, interval=0.5)

    def _add_associations(self) -> None:
        self.sacctmgr(["add", "cluster", self.cluster_name])
        self.sacctmgr(
            [
                "add",
                "account",
                ",".join(self.accounts),
                f"cluster={self.cluster_name}",
                "Description=cardhours test department",
                "Organization=cardhours",
            ]
        )
        self.sacctmgr(["add", "user", "root", f"account={','.join(self.accounts)}", f"cluster={self.cluster_name}"])

    def _start_slurmctld(self) -> None:
        self._daemon("slurmctld", [_binary("slurmctld"), "-D", "-i"], "slurmctld.log")

        def up() -> bool:
            return "UP" in self.command("scontrol", ["ping"], check=False).stdout

        wait_until("slurmctld answers scontrol ping", up, timeout=60, daemons=self.daemons)

    def _start_slurmd(self) -> None:
        self._daemon("slurmd", [_binary("slurmd"), "-D", "-N", config.NODE], "slurmd.log")
        seen = ["(no sinfo answer)"]

        def idle() -> bool:
            out = self.command("sinfo", ["-h", "-N", "-n", config.NODE, "-o", "%T|%E"], check=False).stdout.strip()
            seen[0] = out or seen[0]
            state, _, reason = out.partition("|")
            if "drain" in state or "inval" in state:  # e.g. GPUs without File= in gres.conf
                raise HarnessError(f"node {config.NODE} is {state}: {reason}\n" + self.report())
            return state == "idle"

        try:
            wait_until("node idle in sinfo", idle, timeout=60, daemons=self.daemons, interval=0.5)
        except HarnessError as exc:
            raise HarnessError(f"{exc}\nlast sinfo state|reason: {seen[0]}") from exc

    def stop(self, failed: bool = False) -> None:
        """Cancel jobs, stop the daemons in reverse order, remove the workdir unless kept."""
        if self.env and any(d.name == "slurmctld" and d.alive() for d in self.daemons):
            self.command("scancel", ["--user=root", "--full"], check=False)
            began = time.monotonic()
            while self.command("squeue", ["-h"], check=False).stdout.strip() and time.monotonic() - began < 20:
                time.sleep(0.2)
        for daemon in reversed(self.daemons):
            daemon.stop()
        if self.layout is not None:
            stop_strays(self.layout.slurm_conf)
        self.daemons.clear()
        if self.layout is not None and not (self.keep or failed):
            shutil.rmtree(self.layout.root, ignore_errors=True)

    # --- commands ------------------------------------------------------------------

    def command(
        self, name: str, args: Sequence[str], check: bool = True, timeout: float = 60
    ) -> subprocess.CompletedProcess:
        """Run a Slurm client command against this cluster."""
        return run([_binary(name), *args], env=self.env, check=check, timeout=timeout)

    def sacctmgr(self, args: Sequence[str]) -> str:
        return self.command("sacctmgr", ["-i", *args]).stdout

    @property
    def sacct_command(self) -> str:
        """A command string for cardhours' command mode (``[slurm] sacct_command``)."""
        return shlex.join(["env", f"SLURM_CONF={self.env['SLURM_CONF']}", _binary("sacct")])

    @property
    def sacctmgr_command(self) -> str:
        """A command string for cardhours' command mode (``[clusters.slurm] sacctmgr_command``)."""
        return shlex.join(["env", f"SLURM_CONF={self.env['SLURM_CONF']}", _binary("sacctmgr")])

    @property
    def scontrol_command(self) -> str:
        """A command string for cardhours' command mode (``[clusters.slurm] scontrol_command``)."""
        return shlex.join(["env", f"SLURM_CONF={self.env['SLURM_CONF']}", _binary("scontrol")])

    def sacct(self, args: Sequence[str]) -> str:
        return self.command("sacct", args).stdout

    def submit(self, args: Sequence[str]) -> str:
        """``sbatch --parsable``; returns the job id (the array master id for arrays)."""
        assert self.layout is not None
        defaults = [f"--chdir={self.layout.jobs}", f"--output={self.layout.jobs}/%j.out"]
        out = self.command("sbatch", ["--parsable", *defaults, *args]).stdout.strip()
        return out.split(";")[0]

    def queue(self) -> dict[str, str]:
        """squeue: job id (``12``, ``10_2``, ``10_[3]``) -> state, for every job not finished."""
        out = self.command("squeue", ["-h", "-o", "%i|%T"]).stdout
        return dict(line.split("|", 1) for line in out.splitlines() if line.strip())

    def wait_done(self, job_ids: Iterable[str], timeout: float) -> None:
        """Until squeue shows none of the jobs and sacct has each one (and its tasks) final."""
        ids = sorted(set(job_ids))

        def done() -> bool:
            if any(key.split("_")[0] in ids for key in self.queue()):
                return False
            rows = self.sacct(["-n", "-P", "-X", "-j", ",".join(ids), "-o", "JobIDRaw,State"]).splitlines()
            states = {row.split("|")[1].split()[0] for row in rows if "|" in row}
            return bool(rows) and states <= FINAL_STATES

        wait_until(f"jobs {','.join(ids)} finished", done, timeout=timeout, daemons=self.daemons, interval=0.5)

    def report(self) -> str:
        """Every daemon's status and log tail (for failing tests)."""
        where = f"workdir (kept after an error): {self.layout.root}\n\n" if self.layout else ""
        return where + "\n\n".join(d.report() for d in self.daemons)
