"""``cardhours bench ingest --server-cpus``: splitting the CPUs between the server and the readers."""

from __future__ import annotations

import os

import pytest

from cardhours.bench.cpus import CpuSplitError, running_on, split_cpus

linux = pytest.mark.skipif(not hasattr(os, "sched_getaffinity"), reason="CPU affinity is Linux-only")


def test_the_server_gets_the_lowest_cpus_and_the_readers_the_rest() -> None:
    assert split_cpus(1, {3, 1, 2}) == (frozenset({1}), frozenset({2, 3}))
    assert split_cpus(2, {0, 1, 2, 3}) == (frozenset({0, 1}), frozenset({2, 3}))


@pytest.mark.parametrize("server_cpus", [0, 2, 5])
def test_each_side_needs_a_cpu_of_its_own(server_cpus: int) -> None:
    with pytest.raises(CpuSplitError, match=rf"--server-cpus {server_cpus}: this process may use 2 CPU\(s\) \(4, 7\)"):
        split_cpus(server_cpus, {4, 7})


@linux
def test_running_on_pins_this_process_and_restores_it() -> None:
    before = os.sched_getaffinity(0)
    one = frozenset({min(before)})
    with running_on(one):
        assert os.sched_getaffinity(0) == one
    assert os.sched_getaffinity(0) == before
    with pytest.raises(RuntimeError), running_on(one):
        raise RuntimeError("restored on errors too")
    assert os.sched_getaffinity(0) == before
    with running_on(None):
        assert os.sched_getaffinity(0) == before
