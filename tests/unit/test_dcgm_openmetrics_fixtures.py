"""The OpenMetrics fixture builders write what promtool needs and what their facts say."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import polars as pl
import pytest

from contracts.exporters import DCGM
from tests.fixtures import h200
from tests.fixtures.dcgm_openmetrics import h200_trace_om, render_openmetrics, wild_om

LINE = re.compile(r"^(?P<name>[A-Za-z_:][A-Za-z0-9_:]*)\{(?P<labels>.*)\} (?P<value>\S+) (?P<ts>\d+\.\d{3})$")


def sample_lines(path: Path) -> pl.DataFrame:
    """One row per sample line: name, label text, value, ts (s), position in the file."""
    rows = []
    for position, line in enumerate(path.read_text().splitlines()):
        if line.startswith("#"):
            continue
        match = LINE.match(line)
        assert match, f"not a sample line with a seconds.millis timestamp: {line!r}"
        rows.append((match["name"], match["labels"], float(match["value"]), float(match["ts"]), position))
    return pl.DataFrame(rows, schema=["name", "labels", "value", "ts", "position"], orient="row")


def assert_promtool_layout(path: Path) -> pl.DataFrame:
    text = path.read_text()
    assert text.endswith("# EOF\n")
    lines = sample_lines(path)
    runs = lines.with_columns((pl.col("name") != pl.col("name").shift()).fill_null(True).cum_sum().alias("run"))
    assert runs["run"].max() == lines["name"].n_unique(), "a family is not contiguous"
    series = lines.with_columns(pl.concat_str("name", "labels").alias("key"))
    series_runs = (series["key"] != series["key"].shift()).fill_null(True).sum()
    assert series_runs == series["key"].n_unique(), "a series is not contiguous"
    within = series.with_columns(pl.col("ts").diff().over("key").alias("step"))
    assert within["step"].drop_nulls().min() > 0, "a series is unsorted or repeats a timestamp"
    assert lines["ts"].max() < 1e11, "timestamps must be seconds"
    return lines


@pytest.mark.parametrize("style", ["Hostname", "hostname"])
def test_h200_trace_om_is_every_sample_under_its_job(tmp_path: Path, style: str) -> None:
    path = h200_trace_om(tmp_path / "h200.om", label_style=style)
    lines = assert_promtool_layout(path)
    raw = h200.raw_samples()
    assert lines.height == sum(raw[column].count() for column in DCGM.metric_signals.values())
    assert lines["labels"].str.contains(f'{style}="h200-node"', literal=True).all()
    other = "hostname" if style == "Hostname" else "Hostname"
    assert not lines["labels"].str.contains(f"{other}=", literal=True).any()
    lines = lines.with_columns(pl.col("labels").str.extract(r'hpc_job="([^"]*)"').alias("hpc_job"))
    util = lines.filter(pl.col("name") == "DCGM_FI_DEV_GPU_UTIL").sort("ts")
    expected = raw.select((pl.col("ts").dt.epoch("ms") / 1000).alias("ts"), "hpc_job", "gpu_util")
    assert util.select("ts", "hpc_job", pl.col("value").alias("gpu_util")).equals(expected)
    jobs = h200.jobs().filter(pl.col("kind") != "idle")
    assert set(util["hpc_job"].drop_nulls()) == set(jobs["job_id"])
    assert util["hpc_job"].null_count() > 0  # idle seconds carry no job label
    sm = lines.filter(pl.col("name") == "DCGM_FI_PROF_SM_ACTIVE")
    assert sm["value"].max() <= 1.0  # % became ratios
    assert lines["labels"].str.contains('DCGM_FI_DRIVER_VERSION="580.159.04"', literal=True).all()


def test_h200_rejects_unknown_label_style(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="label_style"):
        h200_trace_om(tmp_path / "x.om", label_style="host")


def test_wild_om_holds_its_facts(tmp_path: Path) -> None:
    path, facts = wild_om(tmp_path / "wild.om")
    lines = assert_promtool_layout(path)
    assert lines.height == facts["n_samples"]
    blanks = {140737488355328.0, 9223372036854775792.0, 4294967295.0, 2147483632.0}
    assert lines.filter(pl.col("value").is_in(list(blanks))).height == sum(facts["sentinels"].values())
    assert lines.filter(pl.col("value").is_in([1.7, 140.0, -5.0])).height == sum(facts["out_of_range"].values())
    dup = lines.filter(pl.col("labels").str.contains(f'Hostname="{facts["duplicate_hostname"]}"', literal=True))
    assert dup.height == facts["duplicate_samples"]
    assert dup.select("ts").n_unique() == facts["duplicate_rows"]
    a1 = lines.filter(
        pl.col("labels").str.contains('gpu="1",UUID="GPU-node-a-1', literal=True),
        pl.col("name") == "DCGM_FI_DEV_POWER_USAGE",
    )
    assert a1.height == facts["timestamps"] - facts["gap"]["missing"]
    gr = lines.filter(
        pl.col("labels").str.contains("GPU-node-a-1", literal=True), pl.col("name") == "DCGM_FI_PROF_GR_ENGINE_ACTIVE"
    )
    assert gr["value"].unique().to_list() == [0.0]
    mig_power = lines.filter(
        pl.col("labels").str.contains("GPU_I_ID=", literal=True), pl.col("name") == "DCGM_FI_DEV_POWER_USAGE"
    )
    per_ts = mig_power.group_by("ts").agg(pl.len().alias("n"), pl.col("value").n_unique().alias("values"))
    assert per_ts.height == facts["mig"]["device_rows"]
    assert (per_ts["n"] == 2).all() and (per_ts["values"] == 1).all()  # repeated identically per instance
    for label in ("Hostname=", "hostname=", "exported_pod=", "pod_name=", "site_rack=", "GPU_I_PROFILE="):
        assert lines["labels"].str.contains(label, literal=True).any(), label
    energy = lines.filter(
        pl.col("labels").str.contains("GPU-node-b-1", literal=True),
        pl.col("name") == "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
    ).sort("ts")
    assert (energy["value"].diff() < 0).sum() == 1  # exactly one counter reset


def test_render_refuses_conflicting_samples(tmp_path: Path) -> None:
    long = pl.DataFrame({"__name__": ["m", "m"], "gpu": ["0", "0"], "ts_ms": [1000, 1000], "value": [1.0, 2.0]})
    with pytest.raises(ValueError, match="another value"):
        render_openmetrics(long, tmp_path / "x.om")
    same = long.with_columns(pl.lit(1.0).alias("value"))
    assert sample_lines(render_openmetrics(same, tmp_path / "y.om")).height == 1


@pytest.mark.integration
@pytest.mark.parametrize("which", ["h200", "wild"])
def test_promtool_keeps_every_sample(tmp_path: Path, which: str) -> None:
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.fail("promtool is missing: apt-get install -y prometheus (scripts/install-system-deps.sh)")
    path = h200_trace_om(tmp_path / "in.om") if which == "h200" else wild_om(tmp_path / "in.om")[0]
    lines = sample_lines(path)
    done = subprocess.run(
        [promtool, "tsdb", "create-blocks-from", "openmetrics", str(path), str(tmp_path / "db")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    metas = [json.loads(meta.read_text()) for meta in (tmp_path / "db").glob("*/meta.json")]
    assert sum(meta["stats"]["numSamples"] for meta in metas) == lines.height
    series = lines.select(pl.concat_str("name", "labels")).n_unique()
    assert max(meta["stats"]["numSeries"] for meta in metas) <= series
