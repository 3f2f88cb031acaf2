"""One asset's run (``Step``): its period, the config, and reads and writes of the tables it
declared, through the store (pipelines/store.py), opened on first use and closed at the end."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from datetime import date, datetime
from typing import Any

import polars as pl
import pyarrow as pa
from dagster import AssetCheckResult, AssetExecutionContext, AssetKey, MaterializeResult

from config import Config
from config.cluster import ClusterConfig
from pipelines.partitions import naive_window
from pipelines.resources import CardhoursResource
from pipelines.store import Span, Store
from pipelines.tables import TABLES, Node, Table
from warehouse.lake_parts import PartitionWriter
from warehouse.landings import Landing
from warehouse.partitions import Frame


class UndeclaredReadError(LookupError):
    """An asset read a table it does not name in ``reads=``: its lineage would be wrong."""


class Step:
    """The run of one asset for one partition (a UTC day or month)."""

    def __init__(
        self,
        context: AssetExecutionContext,
        cardhours: CardhoursResource,
        target: Node,
        reads: Sequence[Table] = (),
        run_config: Any = None,
    ) -> None:
        self.context, self.cardhours, self.target, self.run_config = context, cardhours, target, run_config
        self.start, self.end = naive_window(context.partition_time_window)
        self._reads = {table.name for table in reads} | {target.name}
        self._tables = [*reads, *([target] if isinstance(target, Table) else [])]
        self._exits = ExitStack()
        self._store: Store | None = None

    @property
    def key(self) -> AssetKey:
        return self.target.key

    @property
    def grain(self) -> str:
        return self.target.grain

    @property
    def period(self) -> date:
        """The partition's day, or its month's first day."""
        return self.start.date()

    day = month = period

    @property
    def config(self) -> Config:
        return self.cardhours.config

    @property
    def clusters(self) -> list[ClusterConfig]:
        return list(self.config.clusters)

    def clusters_with(self, source: str) -> list[ClusterConfig]:
        """The clusters that land ``source`` (``ClusterConfig.sources``), in config order."""
        return self.config.clusters_with(source)

    @property
    def log(self):
        return self.context.log

    @property
    def store(self) -> Store:
        """The open store, opened on first use: the lake alone when the asset's table and its
        reads are all lake tables, else the warehouse (under its lock)."""
        if self._store is None:
            self._store = self._exits.enter_context(Store.open(self.cardhours, self._tables))
        return self._store

    def close(self) -> None:
        """Close the store (a check that opens the warehouse its own way runs after this)."""
        self._store = None
        self._exits.close()

    def read(
        self,
        table: Table,
        *,
        cluster: str | None = None,
        columns: str = "*",
        with_period: bool = True,
        where: str = "",
        params: Sequence[object] = (),
        order_by: str = "",
    ) -> pl.DataFrame:
        """The rows of ``table`` in this run's period (a monthly run reads a daily table's days
        of the month), of one cluster if given, filtered by ``where`` (``?`` bound from ``params``).
        ``with_period=False`` leaves out the period column (the frame as its transform built it)."""
        self._declared(table.name)
        if not with_period:
            columns = f"{columns} EXCLUDE ({table.period})"
        span = self.period if table.grain == self.grain else Span(self.start.date(), self.end.date())
        filters = {table.period: span} | ({"cluster": cluster} if cluster is not None else {})
        return self.store.read(table, filters, columns=columns, predicate=where, params=params, order_by=order_by)

    def sql(self, text: str, params: Sequence[object] | None = None) -> pl.DataFrame:
        """A query of the declared tables (named as in pipelines/tables.py)."""
        self._named(text)
        return self.store.sql(text, params)

    def arrow(self, text: str, params: Sequence[object]) -> pa.Table:
        """A query of the declared tables as Arrow (rows that go back to the store unconverted)."""
        self._named(text)
        return self.store.arrow(text, params)

    def write(
        self,
        frame: Frame,
        *,
        table: Table | None = None,
        cluster: str | None = None,
        partition: Mapping[str, object] | None = None,
        also: Sequence[Landing] = (),
    ) -> int:
        """Replace this run's partition of ``table`` (default: the asset's own; of ``cluster``
        for a table written per cluster, or of each configured cluster, from its rows, when
        none is named) with ``frame``, adding the period column when the frame has none; or
        replace ``partition`` as given. ``also``: the day's landings, recorded after. Rows written."""
        table = table or self._own_table()
        if partition is None and table.by_cluster and cluster is None:
            return self._write_each_cluster(frame, table, also)
        if partition is None:
            partition = ({"cluster": cluster} if table.by_cluster else {}) | {table.period: self.period}
            frame = with_column(frame, table.period, self.period)
        return self.store.write(table, frame, partition, also)

    @contextmanager
    def writer(self, *, table: Table | None = None, cluster: str | None = None) -> Iterator[PartitionWriter]:
        """This run's partition of a lake ``table`` (default: the asset's own; of ``cluster`` for a
        table written per cluster) written from frames appended one by one (a day's shards),
        replaced when the block ends (``Store.writer``)."""
        table = table or self._own_table()
        partition = ({"cluster": cluster} if table.by_cluster else {}) | {table.period: self.period}
        with self.store.writer(table, partition) as out:
            yield out

    def _write_each_cluster(self, frame: Frame, table: Table, also: Sequence[Landing]) -> int:
        data = frame if isinstance(frame, pl.DataFrame) else pl.DataFrame(frame)
        names = [cluster.name for cluster in self.clusters]
        strays = sorted(set(data.get_column("cluster").unique().to_list()) - set(names)) if data.height else []
        if strays:
            raise ValueError(f"{table.name} rows of clusters {strays} that are not configured ({names})")
        rows = sum(self.write(data.filter(pl.col("cluster") == name), table=table, cluster=name) for name in names)
        for landing in also:
            self.store.land(landing)
        return rows

    def done(
        self,
        metadata: Mapping[str, Any] | None = None,
        checks: Iterable[AssetCheckResult] = (),
        rows: int | None = None,
    ) -> MaterializeResult:
        """The materialization: ``rows`` (when written) and the period first, then ``metadata``."""
        head: dict[str, Any] = {} if rows is None else {"rows": rows}
        head[self.grain] = str(self.period)
        return MaterializeResult(metadata={**head, **(metadata or {})}, check_results=list(checks))

    def each_cluster(
        self, build: Callable[[ClusterConfig], pl.DataFrame], only: Callable[[ClusterConfig], bool] | None = None
    ) -> list[pl.DataFrame]:
        """``build(cluster)`` for each configured cluster (that passes ``only``), in config order."""
        return [build(cluster) for cluster in self.clusters if only is None or only(cluster)]

    def _named(self, text: str) -> None:
        for table in TABLES:
            if re.search(rf"\b{re.escape(table.name)}\b", text):
                self._declared(table.name)

    def _declared(self, name: str) -> None:
        if name not in self._reads:
            raise UndeclaredReadError(
                f"asset {self.key.to_user_string()} reads {name} but does not declare it: "
                f"add it to reads= of its @table_asset, so Dagster shows where its data comes from"
            )

    def _own_table(self) -> Table:
        if not isinstance(self.target, Table):
            raise TypeError(f"asset {self.key.to_user_string()} writes no table of its own: name the table")
        return self.target


def with_column(frame: Frame, name: str, value: date | datetime) -> Frame:
    """``frame`` with a constant column ``name`` when it has none (a date: DuckDB's DATE)."""
    if isinstance(frame, pa.Table):
        if name in frame.column_names:
            return frame
        return frame.append_column(name, pa.array([value] * frame.num_rows, pa.date32()))
    return frame if name in frame.columns else frame.with_columns(pl.lit(value).alias(name))
