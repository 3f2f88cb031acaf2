"""One exclusive lock per warehouse: ``hold_warehouse(path, what)``.

Every run and every close holds it for its whole duration, so a close never reads marts that a
run is halfway through rewriting, and a second writer gets a message naming the holder instead
of DuckDB's "could not set lock" error. The lock is ``flock`` on ``<warehouse file>.lock``
beside the DuckDB file; the file holds a small JSON object (``what``, ``since`` in UTC,
``pid``, ``host``) that a refused process reads to say who is busy. The kernel releases a
``flock`` when its process exits, however it exits, so a file left by a killed process never
blocks anyone (its JSON is simply overwritten by the next holder).

Re-entrant within one process: while a process holds the lock, nested ``hold_warehouse`` calls
for the same warehouse (e.g. the assets of a ``cardhours run`` executing in-process) only count
up and down; the first holder's description stays in the file. Not a lock between threads of
one process. ``flock`` on network file systems is only as good as the file system's support.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

SUFFIX = ".lock"
_READ_ATTEMPTS = 20


class WarehouseBusy(RuntimeError):
    """Another process holds the warehouse lock; the message names it and what to do."""

    def __init__(self, path: Path, holder: dict[str, object] | None) -> None:
        self.path = path  # the warehouse (DuckDB file)
        self.holder = holder or {}
        if holder:
            who = (
                f"{holder.get('what', 'another cardhours process')} since {holder.get('since', '?')}, "
                f"PID {holder.get('pid', '?')} on {holder.get('host', '?')}"
            )
        else:
            who = "another cardhours process (its lock file gives no details)"
        super().__init__(
            f"warehouse {path} is busy: {who}; wait for it to finish and try again "
            f"(if it hangs, stop that process: the lock goes with it)"
        )


@dataclass
class _Held:
    fd: int
    depth: int


_held: dict[str, _Held] = {}
_guard = threading.Lock()


def lock_path(warehouse: str | Path) -> Path:
    """``<warehouse file>.lock``, beside the DuckDB file."""
    path = Path(warehouse)
    return path.with_name(path.name + SUFFIX)


def read_holder(path: Path) -> dict[str, object] | None:
    """The JSON the current holder wrote (None if the file is empty or unreadable)."""
    for _ in range(_READ_ATTEMPTS):  # the holder truncates, then writes: retry a moment
        try:
            text = path.read_text(encoding="utf-8")
        except OSError:
            return None
        if text.strip():
            try:
                value = json.loads(text)
            except json.JSONDecodeError:
                value = None
            return value if isinstance(value, dict) else None
        time.sleep(0.01)
    return None


def _acquire(warehouse: Path, what: str) -> int:
    path = lock_path(warehouse)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise WarehouseBusy(warehouse, read_holder(path)) from None
    except BaseException:
        os.close(fd)
        raise
    since = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%SZ")
    holder = {"what": what, "since": since, "pid": os.getpid(), "host": socket.gethostname()}
    os.ftruncate(fd, 0)
    os.pwrite(fd, (json.dumps(holder) + "\n").encode("utf-8"), 0)
    return fd


def _release(fd: int) -> None:
    try:
        os.ftruncate(fd, 0)
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def acquire_warehouse(warehouse: str | Path, what: str) -> None:
    """Take the lock (or count up if this process holds it); raises ``WarehouseBusy``."""
    path = Path(warehouse).absolute()
    key = str(lock_path(path))
    with _guard:
        held = _held.get(key)
        if held is not None:
            held.depth += 1
            return
        _held[key] = _Held(_acquire(path, what), 1)


def release_warehouse(warehouse: str | Path) -> None:
    """Count down; the outermost release unlocks."""
    key = str(lock_path(Path(warehouse).absolute()))
    with _guard:
        held = _held.get(key)
        if held is None:
            raise RuntimeError(f"warehouse lock {key} is not held by this process")
        held.depth -= 1
        if held.depth == 0:
            del _held[key]
            _release(held.fd)


@contextmanager
def hold_warehouse(warehouse: str | Path, what: str) -> Iterator[None]:
    """Hold the warehouse's exclusive lock for the block. ``what`` says who holds it
    (``"cardhours close 2026-10"``); a refused caller's message quotes it."""
    acquire_warehouse(warehouse, what)
    try:
        yield
    finally:
        release_warehouse(warehouse)


def held_here(warehouse: str | Path) -> bool:
    """Whether this process holds the warehouse's lock."""
    with _guard:
        return str(lock_path(Path(warehouse).absolute())) in _held


def busy_holder(warehouse: str | Path) -> WarehouseBusy | None:
    """For a reader: ``WarehouseBusy`` naming the holder when another process holds the lock
    (a run or close is writing), else None. Only probes: the lock is not kept, so a writer
    starting a moment later is not refused because of a reader."""
    path = lock_path(Path(warehouse).absolute())
    if not path.is_file():
        return None
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return WarehouseBusy(Path(warehouse), read_holder(path))
    finally:
        os.close(fd)  # closing drops a shared lock taken above
    return None
