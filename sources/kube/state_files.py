"""``[clusters.kubernetes] path``: one OpenMetrics file, or a folder of one file per UTC day.

A folder holds ``day=YYYY-MM-DD.om`` files (what ``cardhours simulate`` writes for a file-mode
site, or a site's own daily dumps); a read opens only the files of the days its window
overlaps, so a day's ingest costs one day's file, not the whole history's. A series found in
several days' files is one series of the read.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta
from pathlib import Path

import polars as pl

from sources.openmetrics import OpenMetricsError, read_openmetrics
from sources.prometheus import LongSamples
from sources.prometheus.shards import concat_long

PREFIX, SUFFIX = "day=", ".om"


def day_files(folder: Path, start: datetime, end: datetime) -> list[Path]:
    """The folder's day files whose day overlaps ``[start, end)``, in day order."""
    files = []
    for path in sorted(folder.glob(f"{PREFIX}*{SUFFIX}")):
        try:
            day = date.fromisoformat(path.name.removeprefix(PREFIX).removesuffix(SUFFIX))
        except ValueError as exc:
            raise OpenMetricsError(f"{path}: not a day file (expected {PREFIX}YYYY-MM-DD{SUFFIX})") from exc
        first = datetime.combine(day, datetime.min.time())
        if first < end and first + timedelta(days=1) > start:
            files.append(path)
    return files


def merged(long: LongSamples) -> LongSamples:
    """One series id per distinct label set (the first one's), samples renumbered to it."""
    labels = [name for name in long.series.columns if name != "series_id"]
    ids = long.series.group_by(labels, maintain_order=True).agg(
        pl.col("series_id").first().alias("kept"), pl.col("series_id").alias("series_id")
    )
    mapping = ids.select("kept", "series_id").explode("series_id")
    samples = long.samples.join(mapping, on="series_id").drop("series_id").rename({"kept": "series_id"})
    series = long.series.filter(pl.col("series_id").is_in(mapping["kept"].unique().implode()))
    return LongSamples(series, samples.select(long.samples.columns).sort("series_id", "ts"))


def read_state(path: Path, start: datetime, end: datetime) -> LongSamples:
    """The samples of ``[start, end)`` from the file, or from the folder's day files."""
    if not Path(path).is_dir():
        return read_openmetrics(path, start, end)
    parts = [read_openmetrics(file, start, end) for file in day_files(Path(path), start, end)]
    if not parts:
        return LongSamples.empty()  # no file for the window: no series (a coverage gap)
    return parts[0] if len(parts) == 1 else merged(concat_long(parts))
