"""Write step-sampled series given as constant segments into OpenMetrics text.

A series is a metric name, labels and segments ``(t_from, t_to, value)`` in seconds from the
window start: it is sampled on the grid ``k * step`` for every ``t_from <= k * step < t_to``,
as Prometheus scraping a constant exporter value would store it. Families are written
whole, one after the other, each series contiguous with increasing timestamps, so
``promtool tsdb create-blocks-from openmetrics`` takes the file.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path

import polars as pl

BATCH_SERIES = 500  # series expanded to lines at a time


@dataclass
class Series:
    metric: str
    labels: dict[str, str]
    segments: list[tuple[int, int, float]] = field(default_factory=list)

    def text(self) -> str:
        def escape(value: str) -> str:
            return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")

        return self.metric + "{" + ",".join(f'{k}="{escape(v)}"' for k, v in self.labels.items()) + "}"


def _value(value: float) -> str:
    return str(int(value)) if float(value).is_integer() and abs(value) < 1e15 else repr(float(value))


def _lines(batch: list[Series], origin: int, step: int) -> pl.DataFrame:
    rows = [
        (i, s.text(), -(-a // step), -(-b // step), _value(v))
        for i, s in enumerate(batch)
        for a, b, v in s.segments
        if b > a
    ]
    frame = pl.DataFrame(
        rows,
        schema={"i": pl.Int64, "head": pl.String, "k0": pl.Int64, "k1": pl.Int64, "value": pl.String},
        orient="row",
    )
    frame = frame.filter(pl.col("k1") > pl.col("k0")).with_columns(k=pl.int_ranges("k0", "k1")).explode("k")
    stamp = (pl.col("k") * step + origin).cast(pl.String)
    return frame.sort("i", "k").select(pl.concat_str("head", pl.lit(" "), "value", pl.lit(" "), stamp).alias("line"))


def write_openmetrics(
    path: Path, families: dict[str, tuple[str, str]], series: Iterable[Series], origin: int, step: int
) -> int:
    """Write ``series`` grouped by family (in ``families`` order: name -> (type, help)),
    ``origin`` the window start in Unix seconds; returns the number of samples written."""
    by_family: dict[str, list[Series]] = {name: [] for name in families}
    for one in series:
        if one.metric not in by_family:
            raise ValueError(f"series {one.text()} belongs to no declared family")
        by_family[one.metric].append(one)
    written = 0
    partial = Path(path).with_name(Path(path).name + ".partial")
    with partial.open("wb") as out:
        for name, (kind, text) in families.items():
            out.write(f"# HELP {name} {text}\n# TYPE {name} {kind}\n".encode())
            members = by_family[name]
            for lo in range(0, len(members), BATCH_SERIES):
                lines = _lines(members[lo : lo + BATCH_SERIES], origin, step)
                lines.write_csv(out, include_header=False, quote_style="never")
                written += lines.height
        out.write(b"# EOF\n")
    partial.replace(path)
    return written


DAY = 86_400


def clipped(series: Iterable[Series], lo: int, hi: int) -> list[Series]:
    """The series' segments cut to ``[lo, hi)`` (seconds from the window start); series left
    with none are dropped. The sampling grid stays the window's, so the days' files together
    hold exactly the samples of one file of the whole window."""
    out = []
    for one in series:
        segments = [(max(a, lo), min(b, hi), v) for a, b, v in one.segments if min(b, hi) > max(a, lo)]
        if segments:
            out.append(Series(one.metric, one.labels, segments))
    return out


def write_daily(
    folder: Path, families: dict[str, tuple[str, str]], series: list[Series], origin: int, step: int, first: date
) -> int:
    """``write_openmetrics`` one file per UTC day of the window, ``folder/day=YYYY-MM-DD.om``
    (a file reader then reads one day's file, not the whole window's); samples written."""
    Path(folder).mkdir(parents=True, exist_ok=True)
    last = max((b for one in series for _, b, _ in one.segments), default=0)
    written = 0
    for index in range(-(-last // DAY)):
        day = first + timedelta(days=index)
        part = clipped(series, index * DAY, (index + 1) * DAY)
        written += write_openmetrics(Path(folder) / f"day={day.isoformat()}.om", families, part, origin, step)
    return written
