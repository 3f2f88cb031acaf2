"""The energy counter under downsampling (``sources.prometheus.energy.place_energy``).

Raw readings and step points built by hand, through the same path as a read (normalize,
pivot, conform, screen) into ``stg_dcgm__gpu_hourly``: the energy per GPU, job and hour
from the step rows must be the raw readings' to the millijoule, with a job shorter than a
step between two stretches of idle time, a counter reset, a restart duplicate under the
exporter pod's name, two jobs sharing a GPU, and a GPU without the counter.
"""

from __future__ import annotations

from datetime import datetime, timedelta

import polars as pl
from polars.testing import assert_frame_equal

from contracts.exporters import DCGM
from sources.metrics import conform_samples
from sources.prometheus import SAMPLES_SCHEMA, LongSamples
from sources.prometheus.energy import place_energy
from sources.series_labels import normalize_series
from sources.series_pivot import pivot_samples
from transforms.helpers.dcgm_quality import screen_samples
from transforms.staging.stg_dcgm__gpu_hourly import stg_dcgm__gpu_hourly

ENERGY, POWER = "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "DCGM_FI_DEV_POWER_USAGE"
T0 = datetime(2026, 3, 2, 9, 55)  # ten minutes across 10:00
STEP = 60
EPOCH = datetime(1970, 1, 1)


def counter(t: int) -> float:
    """mJ at t seconds after T0 on GPU 0: it resets (reboot) at 430 s."""
    return float(1_000_000 + 100 * t if t < 430 else 7 + 50 * (t - 430))


def label_sets() -> list[dict]:
    gpu0 = {"UUID": "GPU-0", "Hostname": "n1", "gpu": "0"}
    gpu1 = {"UUID": "GPU-1", "Hostname": "n1", "gpu": "1"}
    return [
        {**gpu0},  # idle: 0-125 s and 160-250 s
        {**gpu0, "hpc_job": "A"},  # 130-150 s: inside one step, idle on both sides
        {**gpu0, "hpc_job": "B"},  # 250 s to the end, across the reset
        {**gpu0, "Hostname": "dcgm-exporter-7f9c", "hpc_job": "B"},  # restart duplicate, 300-390 s
        {**gpu1, "hpc_job": "C"},  # C and D share GPU 1 for 0-300 s
        {**gpu1, "hpc_job": "D"},
        {**gpu1},  # idle after them
        {"UUID": "GPU-2", "Hostname": "n2", "gpu": "0"},  # power only
    ]


def readings() -> list[tuple[int, int, float, float | None]]:
    """(label set, t, power, energy) every 10 s."""
    rows = []
    for t in range(0, 600, 10):
        job0 = 1 if 125 <= t < 160 else 2 if t >= 250 else 0
        rows.append((job0, t, 100.0 + t % 7, counter(t)))
        if job0 == 2 and 300 <= t < 400:
            rows.append((3, t, 100.0 + t % 7, counter(t)))
        for one in (4, 5) if t < 300 else (6,):
            rows.append((one, t, 200.0 + t % 5, float(5_000_000 + 300 * t)))
        rows.append((7, t, 50.0, None))
    return rows


def series() -> pl.DataFrame:
    sets = label_sets()
    table = [
        {"series_id": 2 * i + k, "__name__": name, **labels}
        for i, labels in enumerate(sets)
        for k, name in enumerate((POWER, ENERGY))
    ]
    return pl.DataFrame(table).with_columns(pl.col("series_id").cast(pl.UInt32))


def raw_long() -> LongSamples:
    rows = []
    for i, t, power, energy in readings():
        ts = T0 + timedelta(seconds=t)
        rows.append((2 * i, ts, power))
        if energy is not None:
            rows.append((2 * i + 1, ts, energy))
    samples = pl.DataFrame(rows, schema=["series_id", "ts", "value"], orient="row").cast(SAMPLES_SCHEMA)
    return LongSamples(series(), samples.sort("series_id", "ts"))


def downsampled_long() -> LongSamples:
    """Power averaged per step and stamped with the step start (what the server returns), the
    energy counter raw (what the read asks for)."""
    raw = raw_long().samples
    power = raw.filter(pl.col("series_id") % 2 == 0)
    stepped = power.group_by("series_id", pl.col("ts").dt.truncate(f"{STEP}s")).agg(pl.col("value").mean())
    energy = raw.filter(pl.col("series_id") % 2 == 1)
    samples = pl.concat([stepped.select(SAMPLES_SCHEMA.keys()).cast(SAMPLES_SCHEMA), energy])
    return LongSamples(series(), samples.sort("series_id", "ts"))


def hourly_energy(long: LongSamples, step: int) -> pl.DataFrame:
    wide = pivot_samples(normalize_series(long.series, DCGM), long.samples)
    clean = screen_samples(conform_samples(wide, "c").collect(), "c/2026-03-02").clean
    hourly = stg_dcgm__gpu_hourly(clean.lazy(), step).collect()
    key = ["hostname", "gpu", "hpc_job", "hour"]
    return hourly.select(*key, "energy_delta_mj", "n_samples").sort(key, nulls_last=True)


def placed() -> LongSamples:
    start_us = (T0 - EPOCH) // timedelta(microseconds=1)
    return place_energy(downsampled_long(), DCGM, start_us, STEP * 1_000_000)


def test_energy_per_gpu_job_and_hour_is_the_raw_readings() -> None:
    exact = hourly_energy(raw_long(), 10)
    got = hourly_energy(placed(), STEP)
    assert exact.filter(pl.col("hpc_job") == "A")["energy_delta_mj"].item() == counter(150) - counter(120)
    assert exact.filter(pl.col("hpc_job") == "B")["energy_delta_mj"].sum() > counter(590) > 0  # across the reset
    assert_frame_equal(got.drop("n_samples"), exact.drop("n_samples"))


def test_one_row_per_series_and_step_except_where_a_series_resumes_or_the_counter_resets() -> None:
    long = placed()
    wide = pivot_samples(normalize_series(long.series, DCGM), long.samples)
    step = pl.col("ts").dt.truncate(f"{STEP}s")

    def at(s):
        return T0 + timedelta(seconds=s)

    rows = wide.filter(pl.col("power_w").is_not_null())
    assert rows.select("hostname", "gpu", "hpc_job", step).is_duplicated().sum() == 0
    # Rows keep their step start unless their GPU changed job, or its counter reset, inside the
    # step: then they are stamped with their last reading's time (still inside the step).
    moved = rows.filter(pl.col("ts") != step).select("hostname", "gpu", "hpc_job", "ts").sort("ts").rows()
    assert moved == [
        ("n1", 0, "A", at(150)),
        ("n1", 0, None, at(170)),
        ("n1", 0, "B", at(290)),
        ("n1", 0, "B", at(470)),
    ]
    # Energy-only rows: the idle readings before A (A interrupts them inside one step), and the
    # readings on both sides of the reset.
    energy_only = wide.filter(pl.col("power_w").is_null()).select("hostname", "gpu", "hpc_job", "ts", "energy_mj")
    assert energy_only.sort("ts").rows() == [
        ("n1", 0, None, at(120), counter(120)),
        ("n1", 0, "B", at(420), counter(420)),
        ("n1", 0, "B", at(430), counter(430)),
    ]
    # Jobs sharing a GPU, a job change on a step edge and a GPU without the counter: untouched.
    assert rows.filter(pl.col("gpu") == 1).filter(pl.col("ts") != step).is_empty()
    assert rows.filter(pl.col("hostname") == "n2").height == 10


def test_no_energy_series_leaves_the_samples_alone() -> None:
    long = downsampled_long()
    power_only = LongSamples(
        long.series.filter(pl.col("__name__") == POWER), long.samples.filter(pl.col("series_id") % 2 == 0)
    )
    start_us = (T0 - EPOCH) // timedelta(microseconds=1)
    assert place_energy(power_only, DCGM, start_us, STEP * 1_000_000) is power_only
