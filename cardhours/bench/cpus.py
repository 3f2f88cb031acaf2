"""``cardhours bench ingest --server-cpus N``: the server on CPUs of its own.

By default the bench's Prometheus and the reader share every CPU of the machine, so each CPU
second the reader spends is taken from the server (on a 2-vCPU machine, where the server
alone keeps both CPUs about 90 % busy, ours / raw is then mostly the reader's extra CPU:
benchmarks/README.md). A site's Prometheus usually runs on other machines. Pinning the
server to the first ``N`` CPUs this process may use and the timed readers to the rest (Linux
affinity; the server's Go runtime sizes GOMAXPROCS to its CPUs) models that on one machine.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager


class CpuSplitError(ValueError):
    """The CPUs cannot be split as asked."""


def split_cpus(server_cpus: int, available: set[int] | None = None) -> tuple[frozenset[int], frozenset[int]]:
    """(the server's CPUs, the readers' CPUs): the lowest ``server_cpus`` of ``available``
    (default: the CPUs this process may use) for the server, the others for the readers."""
    cpus = sorted(_usable() if available is None else available)
    if not 1 <= server_cpus < len(cpus):
        raise CpuSplitError(
            f"--server-cpus {server_cpus}: this process may use {len(cpus)} CPU(s) "
            f"({', '.join(map(str, cpus))}); the server needs at least one and the "
            "reader at least one of its own"
        )
    return frozenset(cpus[:server_cpus]), frozenset(cpus[server_cpus:])


@contextmanager
def running_on(cpus: frozenset[int] | None) -> Iterator[None]:
    """This process (and every process it starts meanwhile) on ``cpus``; the old affinity
    afterwards. ``None``: unchanged."""
    if cpus is None:
        yield
        return
    before = _usable()
    os.sched_setaffinity(0, cpus)
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)


def _usable() -> set[int]:
    if not hasattr(os, "sched_getaffinity"):
        raise CpuSplitError("--server-cpus needs CPU affinity (Linux)")
    return os.sched_getaffinity(0)
