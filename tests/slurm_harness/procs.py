"""Processes for the Slurm harness: daemons run in the foreground as our children, waits
that fail with the daemon logs, and liveness checks that see zombies.

Every daemon is started with ``subprocess.Popen`` in the foreground (``-D``/``-F``), so the
harness holds its pid, reaps it, and stops exactly the processes it started.
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

LOG_TAIL_LINES = 40


class HarnessError(RuntimeError):
    """A part of the test cluster did not come up (the message carries the daemon logs)."""


def binary(*names: str, package: str) -> str:
    """The path of the first of ``names`` installed (sbin included), else a HarnessError."""
    for name in names:
        path = shutil.which(name) or shutil.which(name, path="/usr/sbin:/sbin")
        if path:
            return path
    raise HarnessError(
        f"{names[0]} is not installed (Debian package {package}); "
        "scripts/install-system-deps.sh installs what the Slurm harness needs"
    )


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def proc_state(pid: int) -> str | None:
    """The ``State:`` letter of /proc/PID/status (``Z`` for a zombie), None when gone.

    ``kill -0`` succeeds on zombies, so it cannot tell a dead daemon from a live one.
    """
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("State:"):
                return line.split()[1]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return None
    return None


def is_running(pid: int) -> bool:
    return proc_state(pid) not in (None, "Z", "X")


def tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    """The last lines of a log file, or a note that it is missing."""
    if not path.exists():
        return f"--- {path}: (no such file)"
    text = path.read_text(errors="replace").splitlines()[-lines:]
    return f"--- {path} (last {len(text)} lines)\n" + "\n".join(text)


@dataclass
class Daemon:
    """One foreground daemon; ``logs`` are the files its errors are reported with."""

    name: str
    argv: Sequence[str]
    logs: list[Path]
    env: dict[str, str] | None = None
    user: str | None = None
    proc: subprocess.Popen | None = field(default=None, repr=False)

    @property
    def console(self) -> Path:
        return self.logs[0]

    def start(self) -> Daemon:
        self.console.parent.mkdir(parents=True, exist_ok=True)
        with open(self.console, "ab") as out:
            try:
                self.proc = subprocess.Popen(
                    list(self.argv),
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    env=self.env,
                    user=self.user,
                    group=self.user,
                    extra_groups=[] if self.user else None,
                    start_new_session=True,
                )
            except OSError as exc:
                raise HarnessError(f"{self.name}: cannot run {self.argv[0]}: {exc}") from exc
        return self

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None and is_running(self.proc.pid)

    def report(self) -> str:
        """The daemon's exit status and log tails, for error messages."""
        status = "not started"
        if self.proc is not None:
            code = self.proc.poll()
            status = f"pid {self.proc.pid} " + ("running" if code is None else f"exited with {code}")
        return f"{self.name} ({status}): {' '.join(self.argv)}\n" + "\n".join(tail(p) for p in self.logs)

    def stop(self, timeout: float = 15.0) -> None:
        """SIGTERM, then SIGKILL after ``timeout``; always reaped (no zombie left)."""
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=timeout)


def wait_until(
    what: str, ready: Callable[[], bool], timeout: float, daemons: Sequence[Daemon] = (), interval: float = 0.2
) -> float:
    """Poll ``ready`` until true; return the seconds waited.

    Fails early when one of ``daemons`` dies, and with every daemon's log tail on timeout.
    """
    began = time.monotonic()
    while True:
        if ready():
            return time.monotonic() - began
        dead = [d for d in daemons if not d.alive()]
        if dead:
            raise HarnessError(f"{what}: {dead[0].name} died\n" + "\n\n".join(d.report() for d in daemons))
        if time.monotonic() - began > timeout:
            raise HarnessError(f"{what}: not ready after {timeout:.0f} s\n" + "\n\n".join(d.report() for d in daemons))
        time.sleep(interval)


def run(
    argv: Sequence[str],
    env: dict[str, str] | None = None,
    timeout: float = 60.0,
    check: bool = True,
    user: str | None = None,
) -> subprocess.CompletedProcess:
    """Run a short command; a failure raises HarnessError with its output."""
    try:
        done = subprocess.run(
            list(argv), capture_output=True, text=True, env=env, timeout=timeout, check=False, user=user
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise HarnessError(f"{' '.join(argv)}: {exc}") from exc
    if check and done.returncode != 0:
        raise HarnessError(
            f"{' '.join(argv)} exited with {done.returncode}\nstdout: {done.stdout.strip()}\n"
            f"stderr: {done.stderr.strip()}"
        )
    return done


def chown(path: Path, user: str, mode: int | None = None) -> Path:
    """``chown user:user path`` (and chmod), for directories a dropped-privilege daemon writes."""
    entry = pwd.getpwnam(user)
    os.chown(path, entry.pw_uid, entry.pw_gid)
    if mode is not None:
        os.chmod(path, mode)
    return path
