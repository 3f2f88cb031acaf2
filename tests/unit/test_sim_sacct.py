"""sacct.txt from the simulator, read back independently and checked against truth."""

from __future__ import annotations

import re
from collections import Counter
from datetime import date, datetime, timedelta

import polars as pl
import pytest

from contracts import hostlist
from contracts.schemas import SACCT_FORMAT
from simulate.cluster import build_cluster, build_inventory
from simulate.jobs import build_org, generate_jobs
from simulate.sacct_writer import slurm_duration, write_sacct
from simulate.scheduler import schedule
from simulate.truth import TruthAccumulator, allocations_frame, truth_frame

START = date(2026, 10, 1)
DAYS = 3
WINDOW_START = datetime(2026, 10, 1)
WINDOW_END = WINDOW_START + timedelta(days=DAYS)
TIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}$")
TIMELIMIT = re.compile(r"^(\d+-)?\d{2}:\d{2}:\d{2}$")


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[dict[str, str]], pl.DataFrame, int]:
    cluster = build_cluster("sim", 48, seed=5)
    inventory = build_inventory(cluster, seed=5)
    org = build_org(5)
    runs = schedule(cluster, generate_jobs(cluster, org, START, DAYS, seed=5), WINDOW_START, DAYS * 86400)
    path = tmp_path_factory.mktemp("sacct") / "sacct.txt"
    n = write_sacct(path, runs, inventory, "sim")
    stats = TruthAccumulator(allocations_frame(runs, seed=5)).totals()
    truth = truth_frame(runs, org, inventory, "sim", stats)
    lines = path.read_text(encoding="utf-8").splitlines()
    header = lines[0].split("|")
    assert header == SACCT_FORMAT.split(",")
    rows = [dict(zip(header, line.split("|"), strict=True)) for line in lines[1:]]
    return rows, truth, n


def allocation_rows(rows: list[dict[str, str]]) -> list[dict[str, str]]:
    return [r for r in rows if "." not in r["JobID"]]


def parse_time(text: str) -> datetime | None:
    return None if text in ("Unknown", "None") else datetime.strptime(text, "%Y-%m-%dT%H:%M:%S")


def gpus_from_tres(tres: str) -> float:
    """Untyped gres/gpu count, or a MIG profile's fraction (slices / 7) from its typed entry."""
    items = dict(item.split("=", 1) for item in tres.split(",") if item)
    for key, value in items.items():
        match = re.match(r"^gres/gpu:(\d)g\.\d+gb$", key)
        if match:
            return int(value) * int(match.group(1)) / 7
    return float(items.get("gres/gpu", 0))


def test_every_line_has_every_field(sim: tuple) -> None:
    rows, _, n = sim
    assert len(rows) == n > 100
    for row in rows:
        assert row["Cluster"] == "sim"
        assert TIME.match(row["Submit"]) and TIME.match(row["Eligible"])
        assert TIME.match(row["Start"]) or row["Start"] == "Unknown"
        assert TIME.match(row["End"]) or row["End"] == "Unknown"
        assert row["ElapsedRaw"].isdigit()
    assert all(TIMELIMIT.match(r["Timelimit"]) for r in allocation_rows(rows))
    assert slurm_duration(86400) == "1-00:00:00" and slurm_duration(4 * 3600) == "04:00:00"


def test_gpu_seconds_from_sacct_equal_truth(sim: tuple) -> None:
    rows, truth, _ = sim
    total = 0.0
    for row in allocation_rows(rows):
        start = parse_time(row["Start"])
        if start is None:
            assert row["AllocTRES"] == ""
            continue
        end = parse_time(row["End"]) or WINDOW_END
        seconds = (min(end, WINDOW_END) - max(start, WINDOW_START)).total_seconds()
        assert seconds == int(row["ElapsedRaw"])
        total += seconds * gpus_from_tres(row["AllocTRES"])
    assert total > 0
    assert total == pytest.approx(truth["gpu_seconds"].sum(), rel=1e-6)


def test_one_allocation_row_per_truth_run(sim: tuple) -> None:
    rows, truth, _ = sim
    sacct_runs = Counter((r["JobID"], r["JobIDRaw"]) for r in allocation_rows(rows))
    truth_runs = Counter(truth.select("job_id", "job_id_raw").iter_rows())
    assert sacct_runs == truth_runs
    assert truth.select("job_id_raw", "run_index").is_unique().all()


def test_hosts_and_states_match_truth(sim: tuple) -> None:
    rows, truth, _ = sim
    allocs = allocation_rows(rows)
    truth_rows = truth.sort("job_id_raw", "run_index").iter_rows(named=True)
    by_key = {}
    for row in allocs:  # sacct rows of one job come in run order
        key = row["JobIDRaw"]
        by_key.setdefault(key, []).append(row)
    for t in truth_rows:
        row = by_key[t["job_id_raw"]][t["run_index"]]
        assert row["State"].split(" ")[0] == t["state"]
        assert hostlist.expand(row["NodeList"]) == t["hosts"]
        if t["hosts"]:
            assert int(row["NNodes"]) == len(t["hosts"])


def test_states_and_special_rows_present(sim: tuple) -> None:
    rows, _, _ = sim
    allocs = allocation_rows(rows)
    states = Counter(r["State"].split(" ")[0] for r in allocs)
    for state in ("COMPLETED", "FAILED", "TIMEOUT", "CANCELLED", "REQUEUED", "RUNNING", "PENDING"):
        assert states[state] > 0, state
    assert any(re.match(r"^CANCELLED by \d+$", r["State"]) for r in allocs)
    assert all(r["ExitCode"] != "0:0" for r in allocs if r["State"] == "FAILED")
    pending = [r for r in allocs if r["State"] == "PENDING"]
    assert all(
        (r["Start"], r["End"], r["ElapsedRaw"], r["NodeList"]) == ("Unknown", "Unknown", "0", "None assigned")
        for r in pending
    )
    never_ran = [r for r in allocs if r["State"].startswith("CANCELLED") and r["Start"] == "Unknown"]
    assert never_ran and all(TIME.match(r["End"]) and r["NodeList"] == "None assigned" for r in never_ran)
    assert all(r["End"] == "Unknown" for r in allocs if r["State"] == "RUNNING")


def test_arrays_and_requeues(sim: tuple) -> None:
    rows, _, _ = sim
    allocs = allocation_rows(rows)
    tasks = [r for r in allocs if re.match(r"^\d+_\d+$", r["JobID"])]
    assert tasks and all(r["JobIDRaw"].isdigit() and r["JobIDRaw"] != r["JobID"].split("_")[0] for r in tasks)
    assert len({r["JobIDRaw"] for r in tasks}) == len(tasks)
    ranges = [r for r in allocs if re.match(r"^\d+_\[[\d,-]+\]$", r["JobID"])]
    assert ranges and all(r["State"] == "PENDING" and r["JobIDRaw"] == r["JobID"].split("_")[0] for r in ranges)
    runs_per_job = Counter(r["JobIDRaw"] for r in allocs)
    requeued = [raw for raw, n in runs_per_job.items() if n > 1]
    assert requeued
    for raw in requeued:
        first, second = [r for r in allocs if r["JobIDRaw"] == raw][:2]
        assert first["State"] == "REQUEUED" and second["Submit"] == first["End"]


def test_tres_and_steps(sim: tuple) -> None:
    rows, _, _ = sim
    allocs = allocation_rows(rows)
    started = [r for r in allocs if r["Start"] != "Unknown"]
    whole = [r for r in started if re.search(r"gres/gpu:h[12]00=|gres/gpu:a100=", r["AllocTRES"])]
    mig = [r for r in started if re.search(r"gres/gpu:\dg\.\d+gb=1", r["AllocTRES"])]
    assert whole and mig and len(whole) + len(mig) == len(started)
    assert all(
        re.match(r"^billing=\d+,cpu=\d+,gres/gpu:[\w.]+=\d+,gres/gpu=\d+,mem=\d+[GT],node=\d+$", r["AllocTRES"])
        for r in started
    )
    steps = Counter(r["JobID"].rsplit(".", 1)[1] for r in rows if "." in r["JobID"])
    assert steps["batch"] == steps["extern"] == len(started) and steps["0"] > 0
    for row in rows:
        if row["JobID"].endswith(".batch"):
            assert "gres/gpu=" in row["AllocTRES"] and row["NNodes"] == "1"
        elif "." in row["JobID"]:
            assert "gres/gpu" not in row["AllocTRES"] and row["AllocTRES"].startswith("cpu=")
