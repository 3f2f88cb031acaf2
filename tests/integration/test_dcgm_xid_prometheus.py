"""XID errors as GPU downtime, through a real Prometheus: a back-filled DCGM_FI_DEV_XID_ERRORS
series per GPU (a fall off the bus and a reset, an application fault, a change between two
critical XIDs left sticky until the GPU works again, a critical XID with one NaN point) is read
over the HTTP API by the narrow read, turned into intervals by the rule, and split in
marts.fct_gpu_capacity_split into the down seconds the scenario implies. The same file loaded
into a real VictoriaMetrics gives the same intervals."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import polars as pl
import pytest

from config.cluster import PrometheusConfig
from contracts.capacity_states import state_column
from contracts.xid import CRITICAL_XIDS
from sources.dcgm_xid import XID_METRIC, read_xid_prometheus
from sources.prometheus.client import PrometheusClient
from tests.support.victoria import VictoriaServer
from transforms.marts.fct_gpu_capacity_split import HOURLY_COLUMNS, fct_gpu_capacity_split
from transforms.staging.stg_dcgm__gpu_xid import UNREADABLE_VALUE, screen_xid, stg_dcgm__gpu_xid

pytestmark = [pytest.mark.integration]

T0 = datetime(2026, 3, 2)
DAY = timedelta(days=1)
STEP = 60
EPOCH = datetime(1970, 1, 1)


def _hm(hours: float) -> datetime:
    return T0 + timedelta(hours=hours)


# gpu -> [(from hour, value)]: the value holds until the next change; written every STEP until T0 + 25 h
SCENARIO: dict[int, list[tuple[float, float]]] = {
    0: [(-1, 0.0), (10, 79.0), (12, 0.0)],  # fell off the bus at 10:00, reset at 12:00
    1: [(-1, 13.0)],  # an application's fault, sticky all day: never down
    2: [(-1, 0.0), (3, 63.0), (5.5, 64.0)],  # 63, then 64 kept until the GPU works again (hour 20)
    3: [(-1, 0.0), (4, 48.0), (6, float("nan")), (6 + 1 / 60, 48.0), (8, 0.0)],  # one NaN point amid a 48
}
ACTIVE = {2: [1, 20, 22]}  # hours with real activity (hour 1: before its error)


def _value(changes: list[tuple[float, float]], at: float) -> float:
    return [value for start, value in changes if start <= at][-1]


def _write_om(path: Path) -> None:
    lines = [f"# TYPE {XID_METRIC} gauge"]
    for gpu, changes in SCENARIO.items():
        for minute in range(-60, 25 * 60):
            value = _value(changes, minute / 60)
            text = "NaN" if value != value else f"{value:g}"
            ts = int((_hm(minute / 60) - EPOCH).total_seconds())
            lines.append(f'{XID_METRIC}{{gpu="{gpu}",Hostname="h1",modelName="NVIDIA H100"}} {text} {ts}')
    path.write_text("\n".join([*lines, "# EOF", ""]))


def _hourly() -> pl.DataFrame:
    """fct_gpu_hourly rows of the four GPUs: whole GPUs, a job holding GPU 0 for 600 s at 10:00."""
    rows = [
        ("c", "h1", gpu, None, None, "H100", _hm(h), 3600.0, 600.0 if (gpu, h) == (0, 10) else 0.0)
        for gpu in SCENARIO
        for h in range(24)
    ]
    schema = dict(
        zip(
            HOURLY_COLUMNS,
            [pl.String, pl.String, pl.Int16, pl.Int16, pl.String, pl.String, pl.Datetime("us"), pl.Float64, pl.Float64],
            strict=True,
        )
    )
    return pl.DataFrame(rows, schema=schema, orient="row")


def _read(url: str) -> pl.DataFrame:
    client = PrometheusClient.from_config(PrometheusConfig(url=url, scrape_interval_seconds=STEP, step_seconds=STEP))
    try:
        read = read_xid_prometheus(client, "", STEP, T0, T0 + DAY)
    finally:
        client.close()
    assert read.hosts == {"h1"}  # the host has an XID series (zeros included), whatever the filter kept
    return read.values


def test_xid_errors_through_prometheus_end_in_the_capacity_split(prometheus_with, tmp_path: Path) -> None:
    om = tmp_path / "xid.om"
    _write_om(om)
    _check(_read(prometheus_with([om])), nan_kept=True)


@pytest.mark.slow
def test_victoria_metrics_answers_the_same(tmp_path: Path) -> None:
    om = tmp_path / "xid.om"
    _write_om(om)
    with VictoriaServer(tmp_path / "victoria") as server:
        server.load([om])
        values = _read(server.url)
    _check(values, nan_kept=False)  # it does not serve NaN samples: the point before holds


def _check(values: pl.DataFrame, nan_kept: bool) -> None:
    """The read's points give the scenario's intervals and down seconds; the NaN point is
    quarantined where the server serves it."""
    # the server answered only the critical and the unreadable points: GPU 1's 13 and the zeros stay there
    assert set(values["gpu"]) == {"0", "2", "3"}
    codes, bad = screen_xid(values)
    assert bad.select("gpu", "ts", "problem").rows() == ([("3", _hm(6), UNREADABLE_VALUE)] if nan_kept else [])

    active = pl.DataFrame(
        [("h1", gpu, _hm(h)) for gpu, hours in ACTIVE.items() for h in hours],
        schema={"hostname": pl.String, "gpu": pl.Int16, "hour": pl.Datetime("us")},
        orient="row",
    )
    intervals = stg_dcgm__gpu_xid(codes, active, "c", T0, T0 + DAY, STEP)
    assert intervals.select("gpu", "start_ts", "end_ts", "reason").rows() == [
        (0, _hm(10), _hm(12), CRITICAL_XIDS[79]),
        (2, _hm(3), _hm(5.5), CRITICAL_XIDS[63]),
        (2, _hm(5.5), _hm(20), CRITICAL_XIDS[64]),
        (3, _hm(4), _hm(8), CRITICAL_XIDS[48]),
    ]

    split = fct_gpu_capacity_split(_hourly(), intervals, T0, T0 + DAY)
    down = split.group_by("gpu").agg(pl.col(state_column("down")).sum()).sort("gpu").rows()
    # GPU 0: two hours, less the 600 s the job held (allocation wins); GPU 2: 2.5 h + 14.5 h
    assert down == [(0, 7200.0 - 600.0), (1, 0.0), (2, 61200.0), (3, 14400.0)]
    totals = split.select(pl.sum_horizontal(state_column(s) for s in ("allocated", "down", "idle"))).to_series()
    assert (totals == split["capacity_seconds"]).all()


def test_requests_sized_from_the_series_count_and_refusals_halved(prometheus_with, tmp_path: Path) -> None:
    om = tmp_path / "xid.om"
    _write_om(om)
    whole = _read(prometheus_with([om]))
    # 4 series: a budget of 400 samples plans 50-step requests; a server allowing 150 refuses
    # 1,000-step requests until they are halved small enough
    for budget, server_args in ((400, ()), (8_000, ("--query.max-samples=150",))):
        url = prometheus_with([om], server_args)
        client = PrometheusClient.from_config(
            PrometheusConfig(url=url, scrape_interval_seconds=STEP, step_seconds=STEP)
        )
        try:
            got = read_xid_prometheus(client, "", STEP, T0, T0 + DAY, max_samples=budget).values
        finally:
            client.close()
        assert got.sort("gpu", "ts").equals(whole.sort("gpu", "ts"), null_equal=True)


def test_the_asset_reads_the_configured_prometheus(prometheus_with, tmp_path: Path) -> None:
    """The landing, hourly rollup and XID asset of tests/warehouse/test_dcgm_xid_asset.py, with
    the same file served by a real Prometheus instead of read as a file."""
    from tests.warehouse import test_dcgm_xid_asset as site

    om = tmp_path / "metrics.om"
    site.write_om(om)
    url = prometheus_with([om])
    metrics = '[clusters.metrics]\nsource = "file"\npath = "metrics.om"\nstep_seconds = 60\n'
    assert metrics in site.CONFIG
    prometheus = f'[clusters.metrics]\nsource = "prometheus"\n\n[clusters.prometheus]\nurl = "{url}"\n'
    prometheus += "scrape_interval_seconds = 60\nstep_seconds = 60\n"
    config = tmp_path / "cardhours.toml"
    config.write_text(site.CONFIG.replace(metrics, prometheus))
    site.land(config)
