"""munged for the test cluster: its own key, socket, pid, seed and log under the workdir.

munged refuses to run as root and checks that its key, socket and log directories are
owned by its user and not writable by others, so everything lives in ``<workdir>/munge``
(mode 0755, owned by ``munge``). Slurm finds the socket through ``AuthInfo=socket=...``.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.slurm_harness.procs import Daemon, HarnessError, binary, chown, run, wait_until

MUNGE_USER = "munge"


def start_munged(workdir: Path) -> tuple[Daemon, Path]:
    """Create a key and start munged as the munge user; return (daemon, socket path)."""
    home = workdir / "munge"
    home.mkdir()
    chown(home, MUNGE_USER, 0o755)  # clients need x on the socket dir
    key = home / "munge.key"
    run([binary("mungekey", package="munge"), "--create", f"--keyfile={key}"])
    chown(key, MUNGE_USER, 0o600)
    socket = home / "munge.socket"
    daemon = Daemon(
        "munged",
        [
            binary("munged", package="munge"),
            "--foreground",
            f"--socket={socket}",
            f"--key-file={key}",
            f"--pid-file={home / 'munged.pid'}",
            f"--seed-file={home / 'munged.seed'}",
            "--num-threads=4",
        ],
        logs=[workdir / "logs" / "munged.console"],  # in the foreground munged logs to stderr
        user=MUNGE_USER,
    ).start()
    wait_until("munged socket", lambda: socket.is_socket(), timeout=15, daemons=[daemon])
    return daemon, socket


def check_munge(socket: Path) -> None:
    """A credential round trip through the socket (``munge -n | unmunge``)."""
    munge, unmunge = binary("munge", package="munge"), binary("unmunge", package="munge")
    cred = run([munge, "-n", f"--socket={socket}"]).stdout
    done = subprocess.run([unmunge, f"--socket={socket}"], input=cred, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise HarnessError(f"munge round trip failed through {socket}: {done.stdout} {done.stderr}")
