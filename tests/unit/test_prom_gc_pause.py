"""The garbage collector paused during reads (``gc_pause``)."""

from __future__ import annotations

import gc
import threading

from sources.prometheus.gc_pause import gc_paused


def test_paused_inside_and_resumed_after_the_last_of_overlapping_reads() -> None:
    assert gc.isenabled()
    inner_started, outer_done = threading.Event(), threading.Event()
    seen = []

    def other_read() -> None:
        with gc_paused():
            inner_started.set()
            outer_done.wait(5)
            seen.append(gc.isenabled())  # the first read ended; this one still runs

    with gc_paused():
        assert not gc.isenabled()
        thread = threading.Thread(target=other_read)
        thread.start()
        inner_started.wait(5)
    outer_done.set()
    thread.join(5)
    assert seen == [False] and gc.isenabled()


def test_a_collector_switched_off_before_stays_off() -> None:
    gc.disable()
    try:
        with gc_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_resumed_after_an_error() -> None:
    try:
        with gc_paused():
            raise ValueError("boom")
    except ValueError:
        pass
    assert gc.isenabled()
