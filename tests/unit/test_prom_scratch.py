"""The read's reusable memory (``sources.prometheus.scratch``)."""

from __future__ import annotations

import numpy as np

from sources.prometheus.chunks import Chunk
from sources.prometheus.merge import Merger
from sources.prometheus.plan import Request
from sources.prometheus.scratch import SMALLEST, Held, Scratch, readable


def test_a_given_back_buffer_is_taken_again_instead_of_new_memory() -> None:
    scratch = Scratch()
    a = scratch.take(300_000, np.int64)  # 2.4 MB -> a 4 MiB buffer
    assert scratch.allocated == 4 << 20 and len(a) == 300_000
    a[:] = 7
    scratch.give(a[:10])  # any view of it gives the buffer back
    b = scratch.take(400_000, np.float64)  # 3.2 MB fits the same buffer
    assert scratch.allocated == 4 << 20 and b.dtype == np.float64 and len(b) == 400_000
    c = scratch.take(600_000, np.int64)  # 4.8 MB does not fit: new memory
    assert scratch.allocated == (4 << 20) + (8 << 20) and not np.shares_memory(b, c)


def test_the_smallest_fitting_buffer_is_taken_and_nothing_is_handed_out_twice() -> None:
    scratch = Scratch()
    big, small = scratch.take(2 << 20, np.int64), scratch.take(10, np.uint32)
    assert scratch.allocated == (16 << 20) + SMALLEST
    scratch.give(big, small, small)  # given twice: listed once
    first, second = scratch.take(100, np.uint8), scratch.take(100, np.uint8)
    assert np.shares_memory(first, small) and np.shares_memory(second, big)
    assert scratch.take(100, np.uint8) is not None and scratch.allocated == (16 << 20) + 2 * SMALLEST


def test_arrays_not_taken_from_this_scratch_are_ignored() -> None:
    scratch, other = Scratch(), Scratch()
    scratch.give(np.zeros(1 << 20), other.take(10, np.int64))
    scratch.take(10, np.int64)
    assert scratch.allocated == SMALLEST


def chunk(metric: str, start_s: int, ids: list[int], n: int, scratch: Scratch) -> Chunk:
    ts, values = scratch.take(len(ids) * n, np.int64), scratch.take(len(ids) * n, np.float64)
    ts[:] = np.tile((start_s + np.arange(n)) * 1_000_000, len(ids))
    values[:] = np.repeat(np.array(ids, np.float64), n)
    offsets = np.arange(len(ids), dtype=np.int64) * n
    request = Request(metric, start_s * 1000, (start_s + n) * 1000, len(ids))
    return Chunk(request, np.array(ids, np.int64), offsets, np.full(len(ids), n, np.int64), ts, values, 0)


def test_merger_gives_merged_chunks_back_and_the_next_metric_reuses_them() -> None:
    merger = Merger()
    index = merger.index
    a = index.ids("m_a", [{"gpu": "0"}, {"gpu": "1"}]).tolist()
    b = index.ids("m_b", [{"gpu": "0"}, {"gpu": "1"}]).tolist()
    for start in (0, 100_000):
        merger.add(chunk("m_a", start, a, 100_000, merger.scratch))  # 1.6 MB each array: 2 MiB buffers
    merger.close("m_a")
    used = merger.scratch.allocated
    for start in (0, 100_000):
        merger.add(chunk("m_b", start, b, 100_000, merger.scratch))
    assert merger.scratch.allocated == used  # m_a's chunks' buffers decoded m_b
    merger.close("m_b")
    long = merger.result()
    samples = long.samples
    assert samples.height == 800_000 and samples["series_id"].unique().sort().to_list() == [0, 1, 2, 3]
    first = samples.filter(samples["series_id"] == 1)
    assert first["value"].unique().to_list() == [float(a[1])]
    assert first["ts"].dt.epoch("us").diff().drop_nulls().unique().to_list() == [1_000_000]


def _mapping_flags(array: np.ndarray) -> str:
    """The permission column (``rw-p`` private, ``rw-s`` shared) of the mapping holding ``array``."""
    address = array.__array_interface__["data"][0]
    for line in open("/proc/self/maps"):
        span, perms = line.split()[:2]
        low, high = (int(part, 16) for part in span.split("-"))
        if low <= address < high:
            return perms
    raise AssertionError("no mapping holds the array")


def test_buffers_are_private_anonymous_memory_not_shared_memory() -> None:
    # a MAP_SHARED anonymous mapping (Python's default) is shmem: first touches cost ~1.7x
    taken = Scratch().take(SMALLEST, np.uint8)
    taken[:] = 1
    assert _mapping_flags(taken) == "rw-p"


def test_a_held_body_reads_like_its_bytes_without_a_copy() -> None:
    text = b'{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"gpu":"0"},"values":[[1,"2"]]}]}}'
    scratch = Scratch()
    buffer = scratch.take(len(text) + 1, np.uint8)  # as body.read_into: one byte more than the body
    buffer[: len(text)] = np.frombuffer(text, np.uint8)
    buffer[len(text)] = ord("x")  # past the body: never read
    held = readable(buffer[: len(text)])
    assert isinstance(held, Held) and len(held) == len(text) and bytes(held) == text
    assert held[5:12] == text[5:12] and held[len(text) - 3 :] == b"]}}" and held[-2:] == b"}}"
    assert held.find(b"{", 2) == text.find(b"{", 2) and held.find(b"}}x") == -1
    assert readable(buffer[1 : len(text)]) == text[1:]  # not from the buffer's start: copied
    assert readable(np.frombuffer(text, np.uint8)) == text and readable(text) is text
