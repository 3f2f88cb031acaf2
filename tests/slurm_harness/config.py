"""slurm.conf, slurmdbd.conf, gres.conf and stand-in GPU devices for the one-node test cluster.

Everything lives under the workdir (``Layout``). Choices that matter (Slurm 22.05, no
systemd, no cgroups):

- ``SlurmUser=root`` (and slurmdbd's ``SlurmUser=root``): the daemons run as the test runner
  (root), so state, spool and slurmdbd.conf (mode 0600) are simply root-owned.
- ``proctrack/linuxproc``, ``task/none``, ``jobacct_gather/linux``: no cgroups needed.
- ``SlurmdParameters=config_overrides``: the node claims ``CPUS`` CPUs whatever the machine
  has (CI has 2 cores), so eight 1-GPU jobs can run at once.
- GPUs need ``File=`` in gres.conf (file-less GPUs are dropped and the node is INVAL with
  "gres/gpu count reported lower than configured"): character devices with the NVIDIA
  major (195) stand in for /dev/nvidia0-7 (empty files where mknod is not allowed).
- The munge socket is named twice: ``AuthInfo=socket=...`` for slurmctld/slurmd/clients and
  ``AccountingStoragePass=<socket>`` for connections to slurmdbd (sacctmgr, sacct, slurmctld);
  without the second, those go to /run/munge/munge.socket.2.
- ``cred_expire`` is short so that a requeued job starts again after ~9 s, not 2 minutes.
- Accounts are enforced (``AccountingStorageEnforce=associations``), so ``--account`` must
  name an account created with sacctmgr.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

CLUSTER_NAME = "cardhours-test"
NODE = "localhost"
GPU_TYPE = "h200"
GPUS = 8
CPUS = 32
REAL_MEMORY_MB = 4000
NVIDIA_MAJOR = 195
# Job credential lifetime; a requeued job may not start again before it passes (default 120 s).
CRED_EXPIRE = 8


@dataclass(frozen=True)
class Layout:
    """Where every file of the test cluster lives."""

    root: Path

    @property
    def etc(self) -> Path:
        return self.root / "etc"

    @property
    def slurm_conf(self) -> Path:
        return self.etc / "slurm.conf"

    @property
    def slurmdbd_conf(self) -> Path:  # slurmdbd reads slurmdbd.conf next to $SLURM_CONF
        return self.etc / "slurmdbd.conf"

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    @property
    def run(self) -> Path:
        return self.root / "run"

    @property
    def state(self) -> Path:
        return self.root / "state"

    @property
    def spool(self) -> Path:
        return self.root / "spool"

    @property
    def dev(self) -> Path:
        return self.root / "dev"

    @property
    def jobs(self) -> Path:  # job scripts' working directory and output files
        return self.root / "jobs"

    def make_dirs(self) -> None:
        for path in (self.etc, self.logs, self.run, self.state, self.spool / f"slurmd-{NODE}", self.dev, self.jobs):
            path.mkdir(parents=True, exist_ok=True)


@dataclass(frozen=True)
class Ports:
    slurmctld: int
    slurmd: int
    slurmdbd: int
    mysql: int


def make_gpu_devices(layout: Layout) -> list[Path]:
    """``dev/nvidia0..7``: character devices 195:N, like the real ones.

    Slurm 22.05 only needs the files to exist (no cgroup device limits with task/none), so
    where mknod is not permitted (a container without CAP_MKNOD) empty files stand in.
    """
    paths = []
    for minor in range(GPUS):
        path = layout.dev / f"nvidia{minor}"
        if not path.exists():
            try:
                os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(NVIDIA_MAJOR, minor))
            except PermissionError:
                path.touch()
        paths.append(path)
    return paths


def slurmdbd_conf(
    layout: Layout, ports: Ports, munge_socket: Path, db_user: str, db_password: str, db_name: str
) -> str:
    return f"""\
AuthType=auth/munge
AuthInfo=socket={munge_socket}
DbdHost=localhost
DbdPort={ports.slurmdbd}
SlurmUser=root
DebugLevel=info
LogFile={layout.logs / "slurmdbd.log"}
PidFile={layout.run / "slurmdbd.pid"}
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort={ports.mysql}
StorageUser={db_user}
StoragePass={db_password}
StorageLoc={db_name}
"""


def slurm_conf(layout: Layout, ports: Ports, munge_socket: Path) -> str:
    return f"""\
ClusterName={CLUSTER_NAME}
SlurmctldHost={NODE}
SlurmUser=root
SlurmdUser=root
SlurmctldPort={ports.slurmctld}
SlurmdPort={ports.slurmd}
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={munge_socket},cred_expire={CRED_EXPIRE}
StateSaveLocation={layout.state}
SlurmdSpoolDir={layout.spool}/slurmd-%n
SlurmctldPidFile={layout.run / "slurmctld.pid"}
SlurmdPidFile={layout.run / "slurmd-%n.pid"}
SlurmctldLogFile={layout.logs / "slurmctld.log"}
SlurmdLogFile={layout.logs / "slurmd.log"}
SlurmctldDebug=info
SlurmdDebug=info
MailProg=/bin/true
PlugStackConfig={layout.etc / "plugstack.conf"}
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/linux
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
SchedulerParameters=bf_interval=1,sched_interval=2,batch_sched_delay=0
PriorityType=priority/basic
MinJobAge=300
KillWait=2
CompleteWait=0
InactiveLimit=0
ReturnToService=2
SlurmdParameters=config_overrides
GresTypes=gpu
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
AccountingStoragePort={ports.slurmdbd}
AccountingStoragePass={munge_socket}
AccountingStorageTRES=gres/gpu,gres/gpu:{GPU_TYPE}
AccountingStorageEnforce=associations
NodeName={NODE} NodeHostname={NODE} NodeAddr=127.0.0.1 CPUs={CPUS} RealMemory={REAL_MEMORY_MB} \
Gres=gpu:{GPU_TYPE}:{GPUS} State=UNKNOWN
PartitionName=gpu Nodes={NODE} Default=YES MaxTime=INFINITE State=UP
PartitionName=debug Nodes={NODE} MaxTime=INFINITE State=UP
"""


def gres_conf(layout: Layout) -> str:
    return f"AutoDetect=off\nNodeName={NODE} Name=gpu Type={GPU_TYPE} File={layout.dev}/nvidia[0-{GPUS - 1}]\n"


def write_configs(
    layout: Layout, ports: Ports, munge_socket: Path, db_user: str, db_password: str, db_name: str
) -> None:
    """Write every config file; slurmdbd.conf is 0600 (slurmdbd refuses anything looser)."""
    layout.make_dirs()
    make_gpu_devices(layout)
    layout.slurm_conf.write_text(slurm_conf(layout, ports, munge_socket))
    (layout.etc / "gres.conf").write_text(gres_conf(layout))
    (layout.etc / "plugstack.conf").write_text("")
    dbd = layout.slurmdbd_conf
    dbd.write_text(slurmdbd_conf(layout, ports, munge_socket, db_user, db_password, db_name))
    os.chmod(dbd, 0o600)
