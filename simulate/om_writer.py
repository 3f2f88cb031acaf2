"""Write simulated samples as dcgm-exporter series in OpenMetrics text (`metrics.om`).

The file is what `promtool tsdb create-blocks-from openmetrics` ingests: one family per
dcgm-exporter metric (`# HELP`, `# TYPE <name> gauge`, then its samples), families never
interleaved, each series (label set) contiguous with increasing timestamps (seconds),
null values skipped, `# EOF` last. Metric and label names are dcgm-exporter's, from its
mapping (`contracts.exporters.dcgm`).

Units: the raw columns hold the signals' units, which are dcgm-exporter's (every scale in
its mapping is 1), so values are written unchanged.

The energy metric is a counter in dcgm-exporter, but an OpenMetrics counter's samples
must be named `<family>_total`; it is declared `gauge` here, which is how scrapes of the
exporter are commonly ingested, and keeps the exporter's metric name.

Memory stays bounded: `add_day` renders each family's lines and spills them, sorted by
series, to a Parquet part per family and day in a temporary directory next to the
output; `close` merges each family's parts a few hosts at a time, in series order.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from types import TracebackType
from typing import IO

import polars as pl

from contracts.exporters.dcgm import DCGM
from contracts.schemas import RAW_SAMPLE_SCHEMA

METRICS: dict[str, str] = DCGM.metric_signals  # metric -> raw column (signal)
HELP: dict[str, str] = {metric.name: metric.help for metric in DCGM.metrics}
# The label columns in the order they are written
WRITTEN = ["gpu", "uuid", "pci_bus_id", "device", "model_name", "hostname", "gpu_i_id", "gpu_i_profile", "hpc_job"]
# dcgm-exporter label -> raw column, in that order; None values are omitted.
LABELS: dict[str, str] = {str(DCGM.labels.label_of(column)): column for column in WRITTEN}
SERIES_ORDER = ["hostname", "gpu", "gpu_i_id", "hpc_job", "ts_us"]
MERGE_ROWS = 2_000_000  # rows of one family sorted in memory at a time on close


def escape(value: pl.Expr) -> pl.Expr:
    """OpenMetrics label-value escaping: backslash, double quote, line feed."""
    return (
        value.str.replace_all("\\", "\\\\", literal=True)
        .str.replace_all('"', '\\"', literal=True)
        .str.replace_all("\n", "\\n", literal=True)
    )


def label_set(labels: dict[str, str] | None = None) -> pl.Expr:
    """`{gpu="0",UUID="...",...}` per row; labels whose value is null are left out."""
    pairs = [
        pl.concat_str(pl.lit(f'{name}="'), escape(pl.col(column).cast(pl.String)), pl.lit('"'))
        for name, column in (labels or LABELS).items()
    ]
    return pl.concat_str(pl.lit("{"), pl.concat_str(pairs, separator=",", ignore_nulls=True), pl.lit("}"))


def timestamp_seconds(ts_us: pl.Expr) -> pl.Expr:
    """Unix seconds: an integer on whole seconds, else with six decimals."""
    seconds, micros = ts_us.floordiv(1_000_000), ts_us.mod(1_000_000)
    fraction = pl.concat_str(pl.lit("."), micros.cast(pl.String).str.zfill(6))
    return pl.concat_str(seconds.cast(pl.String), pl.when(micros != 0).then(fraction).otherwise(pl.lit("")))


class OpenMetricsWriter:
    """Append days of RAW_SAMPLE_SCHEMA frames with `add_day`, then `close` to write `path`.

    `labels` / `series_order` replace LABELS / SERIES_ORDER (the Kubernetes pool adds its
    workload label columns: simulate.kube.dcgm)."""

    def __init__(self, path: Path, labels: dict[str, str] | None = None, series_order: list[str] | None = None) -> None:
        self.labels, self.order = labels or LABELS, series_order or SERIES_ORDER
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._spill = Path(tempfile.mkdtemp(prefix=f".{self.path.name}.", dir=self.path.parent))
        self._parts = 0
        self._closed = False

    def add_day(self, frame: pl.DataFrame) -> None:
        if self._closed:
            raise ValueError("the writer is closed")
        missing = set(RAW_SAMPLE_SCHEMA) - set(frame.columns)
        if missing:
            raise ValueError(f"frame lacks columns {sorted(missing)}")
        rows = frame.select(
            *self.order[:-1],
            pl.col("ts").dt.epoch("us").alias("ts_us"),
            label_set(self.labels).alias("labels"),
            *METRICS.values(),
        )
        rows = rows.with_columns(suffix=pl.concat_str(pl.lit(" "), timestamp_seconds(pl.col("ts_us"))))
        for metric, column in METRICS.items():
            line = pl.concat_str(
                pl.lit(metric), pl.col("labels"), pl.lit(" "), pl.col(column).cast(pl.String), pl.col("suffix")
            )
            family = rows.filter(pl.col(column).is_not_null()).select(*self.order, line.alias("line"))
            target = self._spill / metric
            target.mkdir(exist_ok=True)
            family.sort(self.order, nulls_last=True).write_parquet(
                target / f"{self._parts:05d}.parquet", row_group_size=64_000, statistics=True
            )
        self._parts += 1

    def close(self) -> Path:
        """Write the file (atomically: via a temporary name) and drop the spill directory."""
        if self._closed:
            return self.path
        partial = self.path.with_name(self.path.name + ".partial")
        try:
            with partial.open("wb") as out:
                for metric in METRICS:
                    out.write(f"# HELP {metric} {HELP[metric]}\n# TYPE {metric} gauge\n".encode())
                    self._merge_family(metric, out)
                out.write(b"# EOF\n")
            partial.replace(self.path)
        except BaseException:
            partial.unlink(missing_ok=True)
            raise
        finally:
            self._discard()
        return self.path

    def _merge_family(self, metric: str, out: IO[bytes]) -> None:
        parts = sorted((self._spill / metric).glob("*.parquet"))
        if not parts:
            return
        hosts = pl.scan_parquet(parts).group_by("hostname").len().sort("hostname").collect()
        batches = hosts.group_by((pl.col("len").cum_sum() - 1) // MERGE_ROWS, maintain_order=True).agg("hostname")
        for names in batches["hostname"]:  # consecutive hosts, about MERGE_ROWS rows a batch
            hosts_in_batch = pl.col("hostname").is_between(pl.lit(names[0]), pl.lit(names[-1]))
            lines = (
                pl.scan_parquet(parts).filter(hosts_in_batch).sort(self.order, nulls_last=True).select("line").collect()
            )
            lines.write_csv(out, include_header=False, quote_style="never")

    def _discard(self) -> None:
        self._closed = True
        shutil.rmtree(self._spill, ignore_errors=True)

    def __enter__(self) -> OpenMetricsWriter:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        if kind is None:
            self.close()
        else:
            self._discard()
