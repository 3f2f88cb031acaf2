"""The numba decoder of values lists (``sources.prometheus.jit_values``,
``cardhours[fast]``): every value exactly Python's ``float``, every timestamp the exact
microsecond, or a status that sends the metric to the pyarrow decoder."""

from __future__ import annotations

import random

import numpy as np
import pytest

pytest.importorskip("numba", reason="the compiled decoder is the cardhours[fast] extra")

from sources.prometheus import jit_values  # noqa: E402 - after the numba skip above

HIGHEST = np.iinfo(np.int64).max


def read(
    lists: list[str], shift_ms: int = 0, slow_rows: int = 64, words: bool = True
) -> tuple[int, np.ndarray, np.ndarray, np.ndarray]:
    """(status, counts, ts_us, values) of values lists (outer brackets excluded), each list's
    samples counted by its ``[`` and placed one list after the other, slow values parsed;
    ``words=False`` reads timestamps byte by byte only (no 8-digit words)."""
    text = ",".join(f"[{one}]" for one in lists).encode()
    starts, ends, pos = [], [], 0
    for one in lists:
        starts.append(pos + 1)
        ends.append(pos + 1 + len(one))
        pos += len(one) + 3
    starts, ends = np.array(starts, np.int64), np.array(ends, np.int64)
    counts = np.array([one.count("[") for one in lists], np.int64)
    total = int(counts.sum())
    ts, values, series = np.empty(total, np.int64), np.empty(total), np.empty(total, np.uint32)
    slow = np.empty((slow_rows, 3), np.int64)
    status, n, n_slow, _ = jit_values.decode_lists(
        np.frombuffer(text, np.uint8),
        jit_values.words_of(text) if words else np.zeros(0, np.uint64),
        starts,
        ends,
        shift_ms,
        jit_values.LOWEST,
        HIGHEST,
        np.cumsum(counts) - counts,
        counts,
        np.zeros(len(lists), np.int64),
        ts,
        values,
        series,
        slow,
    )
    if status == jit_values.OK and not jit_values.finish_slow(text, slow[:n_slow], values):
        status = -1
    return status, counts, ts[:n], values[:n]


def bits(values) -> list[int]:
    return np.asarray(values, np.float64).view(np.int64).tolist()


def same_as_float(texts: list[str]) -> None:
    status, counts, _, values = read(
        [",".join(f'[{1700000000 + i},"{t}"]' for i, t in enumerate(texts))], slow_rows=len(texts)
    )
    assert status == jit_values.OK and counts.tolist() == [len(texts)]
    expected = [float(t) for t in texts]
    wrong = [(t, v, e) for t, v, e in zip(texts, values.tolist(), expected, strict=True) if bits([v]) != bits([e])]
    assert not wrong, wrong[:5]


EDGES = [
    "0",
    "-0",
    "0.0",
    "-0.0",
    "1",
    "-1",
    "1.",
    ".5",
    "-.5",
    "0.1",
    "0.2",
    "0.3",
    "0.30000000000000004",
    "2.5",
    "123.456",
    "00012.5000",
    "9007199254740992",
    "9007199254740993",
    "9007199254740994",
    "18014398509481985",
    "999999999999999",
    "9999999999999999",
    "99999999999999999",
    "123456789012345678",
    "1234567890123456789",
    "4294967295",
    "2147483632",
    "140737488355328",
    "9223372036854775792",
    "18446744073709551615",
    "123456789012345690000000",
    "1e5",
    "1E-7",
    "-2.5e+300",
    "NaN",
    "+Inf",
    "-Inf",
    "0." + "0" * 21 + "1",
    "0." + "0" * 22 + "1",
    "0." + "0" * 300 + "1",
    "1" + "0" * 22,
    "1" + "0" * 400,
    "0.1234567890123456789012",
    "1.7976931348623157",
    "179769313486231570" + "0" * 291,
    "5e-324",
    "+5",
]


def test_edge_values_are_exactly_float() -> None:
    same_as_float(EDGES)


def test_random_values_are_exactly_float() -> None:
    rng = random.Random(3)
    texts = []
    for _ in range(20_000):  # shortest positional forms, as Prometheus writes them
        x = rng.choice(
            [
                rng.random(),
                rng.random() * 100,
                rng.uniform(-1e6, 1e6),
                rng.random() * 10 ** rng.randint(-30, 30),
                round(rng.random(), rng.randint(0, 8)),
                float(rng.randint(0, 10**12)),
            ]
        )
        texts.append(np.format_float_positional(x, unique=True, trim="-"))
    for _ in range(20_000):  # random decimal strings: 1-20 digits, the dot anywhere, leading zeros
        digits = "".join(rng.choice("0123456789") for _ in range(rng.randint(1, 20)))
        dot = rng.randint(0, len(digits))
        text = digits[:dot] + ("." if rng.random() < 0.7 else "") + digits[dot:]
        texts.append(("-" if rng.random() < 0.3 else "") + text)
    same_as_float(texts)


def test_fast_path_takes_short_decimals_and_leaves_the_rest_to_float() -> None:
    status, _, _, values = read(['[1,"0.5"],[2,"12345.678"],[3,"9007199254740992"]'], slow_rows=0)
    assert status == jit_values.OK and values.tolist() == [0.5, 12345.678, 9007199254740992.0]
    for text in ("NaN", "9007199254740993", "1e5", "0." + "0" * 22 + "1"):  # no room for a slow value
        assert read([f'[1,"{text}"]'], slow_rows=0)[0] == jit_values.TOO_MANY_SLOW, text


def test_timestamps_are_exact_microseconds_less_the_shift() -> None:
    status, counts, ts, _ = read(
        ['[1772409600,"1"],[1772409615.123,"1"],[1772409630.1,"1"],[1772409645.99,"1"]', '[0.001,"2"]'], shift_ms=1
    )
    assert status == jit_values.OK and counts.tolist() == [4, 1]
    assert ts.tolist() == [1772409599999000, 1772409615122000, 1772409630099000, 1772409645989000, 0]


def test_timestamps_read_by_words_equal_byte_by_byte() -> None:
    """Every length of integer part (the 8-digit word read needs 8 digits and a byte after
    them) at every alignment in the body; each list's timestamps increase, as the kernel checks."""
    rng = random.Random(5)
    stamps = []
    for ms in sorted({rng.randint(0, 10 ** rng.randint(1, 15)) for _ in range(3000)}):
        seconds, fraction = divmod(ms, 1000)
        stamps.append(f"{seconds}.{fraction:03d}".rstrip("0").rstrip(".") if fraction else str(seconds))
    lists = [
        ",".join(f'[{t},"{rng.randint(0, 9)}"]' for t in stamps[i : i + rng.randint(1, 9)])
        for i in range(0, len(stamps), 5)
    ]
    by_words, by_bytes = read(lists), read(lists, words=False)
    assert by_words[0] == by_bytes[0] == jit_values.OK
    expected = [
        round(float(t) * 1000) * 1000 for one in lists for t in (p.split(",")[0] for p in one[1:-1].split("],["))
    ]
    assert by_words[2].tolist() == by_bytes[2].tolist() == expected
    assert read(['[12345678x,"1"]'])[0] == read(['[1234567890123,"1"]'])[0] == jit_values.BAD_LAYOUT


@pytest.mark.parametrize(
    "text",
    [
        '[1772409600.1234,"1"]',  # more than milliseconds
        '[1.7e9,"1"]',
        '[-5,"1"]',
        '["1772409600","1"]',  # not decimal seconds
        '[1772409600, "1"]',
        ' [1772409600,"1"]',
        '[1772409600,"1"] ',  # whitespace
        '[1772409600,"1"],',
        '[1772409600,"1"][1,"1"]',
        '[1772409600,"1"',
        "[1772409600,1]",
        '[1772409600,"1]',
    ],
)
def test_other_layouts_are_refused(text: str) -> None:
    assert read([text])[0] == jit_values.BAD_LAYOUT


@pytest.mark.parametrize("text", ["1_0", " 1", "1 ", "", "-", ".", "Infinity", "0x10", "1e", "--1"])
def test_values_python_or_pyarrow_might_read_but_prometheus_never_writes_are_refused(text: str) -> None:
    assert read([f'[1,"{text}"]'])[0] != jit_values.OK


def test_a_list_must_end_before_its_closing_bracket() -> None:
    text = b'[1,"1"],[2,"2"]'
    args = (
        np.array([0]),
        np.array([2]),
        np.zeros(1, np.int64),
        np.empty(4, np.int64),
        np.empty(4),
        np.empty(4, np.uint32),
        np.empty((1, 3), np.int64),
    )
    for end in (len(text), 7):  # past the body's end; a ',' after the list
        status = jit_values.decode_lists(
            np.frombuffer(text, np.uint8),
            jit_values.words_of(text),
            np.array([0]),
            np.array([end]),
            0,
            jit_values.LOWEST,
            HIGHEST,
            *args,
        )[0]
        assert status == jit_values.BAD_LAYOUT


def test_placed_decoding_writes_each_list_at_its_place_and_checks_counts_and_order() -> None:
    lists = ['[10,"1"],[20,"2"],[30,"3"]', '[5,"4"],[40,"NaN"]', '[1,"5"],[3,"6"],[2,"7"]']
    text = ",".join(f"[{one}]" for one in lists).encode()
    starts = np.array([text.index(one.encode()) for one in lists], np.int64)
    ends = starts + np.array([len(one) for one in lists], np.int64)
    body = np.frombuffer(text, np.uint8)
    words = jit_values.words_of(text)
    ts, values, series = np.zeros(6, np.int64), np.zeros(6), np.zeros(6, np.uint32)
    slow = np.empty((4, 3), np.int64)
    us = 1_000_000

    def decode(dest: list[int], expected: list[int], lo: int = 0, hi: int = 35, lists: int = 2):
        return jit_values.decode_lists(
            body,
            words,
            starts[:lists],
            ends[:lists],
            0,
            lo * us,
            hi * us,
            np.array(dest, np.int64),
            np.array(expected, np.int64),
            np.array([7, 9, 3][:lists], np.int64),
            ts,
            values,
            series,
            slow,
        )

    status, n, n_slow, _ = decode([1, 0], [3, 1])  # second list first in the output; its 40 is outside
    assert status == jit_values.OK and n == 4 and n_slow == 0
    assert (ts[:4] // us).tolist() == [5, 10, 20, 30] and series[:4].tolist() == [9, 7, 7, 7]
    assert decode([1, 0], [2, 1])[0] == jit_values.COUNT_MISMATCH  # a sample more than counted
    assert decode([1, 0], [3, 2])[0] == jit_values.COUNT_MISMATCH  # fewer than counted
    assert decode([0, 3, 4], [3, 1, 3], lists=3)[0] == jit_values.OUT_OF_ORDER  # 3 then 2
