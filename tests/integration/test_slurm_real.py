"""cardhours' sacct command mode on a real Slurm 22.05 with accounting (tests/slurm_harness).

One module-scoped cluster runs the job mix of tests/slurm_harness/jobs.py (~40 s with
startup), then the window is ingested exactly as the pipeline does it: ``run_sacct`` ->
``parse_sacct_text`` -> ``stg_slurm__jobs`` -> ``fct_job_usage`` (no DCGM samples), and the
staged runs are checked against what was submitted.
"""

from __future__ import annotations

import shlex
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import polars as pl
import pytest

from sources.sacct import parse_sacct_output, parse_sacct_text, run_sacct
from sources.slurm_nodes import parse_scontrol_nodes, run_scontrol_nodes
from tests.slurm_harness import CRED_EXPIRE, SlurmCluster
from tests.slurm_harness.cluster import _binary
from tests.slurm_harness.jobs import FILL, FILL_SECONDS, MIX, QUEUED, RUN_SECONDS, JobMix, run_mix
from transforms.intermediate.int_gpu_minutes_attributed import SCHEMA as ATTRIBUTED_SCHEMA
from transforms.marts.fct_job_usage import fct_job_usage
from transforms.staging.stg_slurm__jobs import stg_slurm__jobs

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(600)]

CLUSTER = "it-slurm"
ACCOUNTS = pl.DataFrame(
    {
        "cluster": [CLUSTER] * 2,
        "account": ["vis-train", "nlp-pretrain"],
        "department": ["vision", "nlp"],
        "division": ["research", "research"],
    }
)
GPU_MODELS = pl.DataFrame({"cluster": [CLUSTER], "hostname": ["localhost"], "gpu_model": ["H200"]})


@dataclass
class Ingested:
    cluster: SlurmCluster
    mix: JobMix
    raw: pl.DataFrame  # raw.slurm_sacct rows
    jobs: pl.DataFrame  # staging.stg_slurm__jobs
    usage: pl.DataFrame  # marts.fct_job_usage
    rejects: list[pl.DataFrame]  # lines and rows that did not parse, final and busy ingests
    busy: pl.DataFrame  # stg_slurm__jobs while all 8 GPUs were busy and phase 2 pended

    def runs(self, name: str) -> list[dict]:
        """The usage rows of one submitted job, in run (or array task) order."""
        rows = self.usage.filter(pl.col("job_name") == name).sort("start_time", "job_id")
        staged = self.jobs.select(
            "job_id_raw",
            "start_time",
            "array_task_id",
            "array_job_id",
            "gpu_slots",
            "gpu_type",
            "state_detail",
            "exit_code",
            "n_steps",
        )
        key = ["job_id_raw", "start_time"]
        return rows.join(staged, on=key, how="left", nulls_equal=True, maintain_order="left").to_dicts()


def ingest(cluster: SlurmCluster, began: datetime, ended: datetime) -> tuple[pl.DataFrame, pl.DataFrame, list]:
    """Command mode, as the raw_slurm_sacct and staging assets do it: (raw, staged, rejects)."""
    text = run_sacct(cluster.sacct_command, began, ended, cluster.cluster_name)
    raw, bad_lines = parse_sacct_text(text, source="sacct", cluster=CLUSTER, day=began.date(), has_header=False)
    jobs, bad_rows = stg_slurm__jobs(raw, began, ended)
    return raw, jobs, [bad_lines, bad_rows]


@pytest.fixture(scope="module")
def real() -> Iterator[Ingested]:
    busy: list[tuple[pl.DataFrame, pl.DataFrame, list]] = []
    with SlurmCluster() as cluster:

        def while_busy(mix: JobMix) -> None:
            busy.append(ingest(cluster, mix.began, datetime.now(UTC).replace(tzinfo=None) + timedelta(seconds=1)))

        mix = run_mix(cluster, while_busy=while_busy)
        assert mix.ended
        raw, jobs, rejects = ingest(cluster, mix.began, mix.ended)
        no_samples = pl.DataFrame(schema=ATTRIBUTED_SCHEMA)  # a real Slurm without GPUs: no DCGM samples
        usage = fct_job_usage(jobs, no_samples, ACCOUNTS, GPU_MODELS, mix.began, mix.ended, step_seconds=15)
        yield Ingested(cluster, mix, raw, jobs, usage, rejects + busy[0][2], busy[0][1])


def test_every_sacct_line_parses(real: Ingested) -> None:
    assert [r.height for r in real.rejects] == [0, 0, 0, 0], real.rejects
    assert set(real.raw["slurm_cluster"]) == {real.cluster.cluster_name}
    assert real.raw.filter(pl.col("job_id").str.contains(r"\.batch$")).height >= 10  # steps are read, not runs


def test_each_job_has_its_runs_with_the_expected_states(real: Ingested) -> None:
    for spec in MIX:
        states = [row["state"] for row in real.runs(spec.name)]
        assert states == (list(spec.states) if spec.in_window else []), spec.name
    assert real.runs("failing")[0]["exit_code"] == "3:0"
    assert real.runs("cancelled-pending")[0]["state_detail"] == "by 0"


def test_gpu_counts_equal_the_request_and_typed_plus_untyped_is_not_double_counted(real: Ingested) -> None:
    for spec in MIX:
        for row in real.runs(spec.name):
            assert (row["gpus"], row["gpu_slots"], row["gpu_type"]) == (spec.gpus, spec.gpus, "h200"), spec.name
    allocs = real.raw.filter(pl.col("alloc_tres") != "", ~pl.col("job_id").str.contains(r"\."))
    for row in allocs.join(real.jobs.select("job_id_raw", "start_time", "gpus"), on="job_id_raw").to_dicts():
        n = int(row["gpus"])
        assert f"gres/gpu:h200={n},gres/gpu={n}" in row["alloc_tres"]  # real sacct: typed entry first
    by_name = {row["job_name"]: row["req_tres"] for row in real.raw.filter(pl.col("user_name") != "").to_dicts()}
    assert "gres/gpu=1" in by_name["fill-gpus1"] and "gres/gpu:" not in by_name["fill-gpus1"]  # --gpus=1
    assert "gres/gpu=4" in by_name["fill-untyped4"] and "gres/gpu:" not in by_name["fill-untyped4"]


def test_array_tasks_and_their_raw_ids(real: Ingested) -> None:
    master = real.mix.ids["array"]
    tasks = real.runs("array")
    assert sorted(t["array_task_id"] for t in tasks) == ["1", "2", "3"]
    assert {t["array_job_id"] for t in tasks} == {master}
    assert all(t["job_id"] == f"{master}_{t['array_task_id']}" for t in tasks)
    raw_ids = {t["array_task_id"]: t["job_id_raw"] for t in tasks}
    assert raw_ids["3"] == master  # the last task keeps the master record's id
    assert len({raw_ids["1"], raw_ids["2"], master}) == 3


def test_job_cancelled_while_pending_holds_nothing(real: Ingested) -> None:
    line = real.raw.filter(pl.col("job_name") == "cancelled-pending").to_dicts()
    assert [(r["alloc_tres"], r["node_list"]) for r in line] == [("", "None assigned")]
    (run,) = real.runs("cancelled-pending")
    assert run["start_time"] is None or run["start_time"] == run["end_time"]
    assert (run["gpu_hours"], run["elapsed_seconds"], run["hosts"], run["n_steps"]) == (0.0, 0, "", 0)


def test_job_held_and_cancelled_before_eligible_is_outside_every_window(real: Ingested) -> None:
    job = real.mix.ids["cancelled-held"]
    assert job not in set(real.raw["job_id_raw"])
    shown = real.cluster.sacct(["-n", "-P", "-X", "-j", job, "-o", "JobName,State,Eligible,AllocTRES"]).strip()
    assert shown == "cancelled-held|CANCELLED by 0|Unknown|"


def test_queue_time_only_for_jobs_that_waited_for_gpus(real: Ingested) -> None:
    for spec in MIX:
        runs = [r for r in real.runs(spec.name) if r["elapsed_seconds"] > 0][:1]  # first runs
        for run in runs:
            if spec.waits:
                assert run["queue_seconds"] >= 1, spec.name
            else:
                assert run["queue_seconds"] <= 1, spec.name
            assert run["submit_wait_seconds"] >= run["queue_seconds"] >= 0


def test_requeue_gives_two_runs_and_resets_submit(real: Ingested) -> None:
    first, second = real.runs("requeued")
    assert first["job_id_raw"] == second["job_id_raw"] == real.mix.ids["requeued"]
    assert first["gpu_hours"] > 0  # GPU time spent before the requeue is kept
    assert second["submit_time"] >= first["end_time"]  # submit resets at the requeue
    assert (second["eligible_time"] - second["submit_time"]).total_seconds() >= CRED_EXPIRE
    assert (first["n_steps"], second["n_steps"]) == (1, 1)


def test_card_hours_are_gpus_times_elapsed(real: Ingested) -> None:
    elapsed_raw = real.raw.filter(~pl.col("job_id").str.contains(r"\.")).select(
        "job_id_raw", pl.col("elapsed_raw").cast(pl.Int64), start=pl.col("start_time")
    )
    for spec in MIX:
        for run in real.runs(spec.name):
            seconds = (run["end_time"] - run["start_time"]).total_seconds() if run["start_time"] else 0
            assert run["elapsed_seconds"] == seconds
            assert run["gpu_hours"] == pytest.approx(spec.gpus * seconds / 3600)
            start = run["start_time"].strftime("%Y-%m-%dT%H:%M:%S") if run["start_time"] else "None"
            match = elapsed_raw.filter(pl.col("job_id_raw") == run["job_id_raw"], pl.col("start") == start)
            assert match["elapsed_raw"].to_list() == [seconds], spec.name
    fill = real.runs("fill-h200x2")[0]
    assert FILL_SECONDS - 1 <= fill["elapsed_seconds"] <= FILL_SECONDS + 2
    assert all(RUN_SECONDS - 1 <= t["elapsed_seconds"] <= RUN_SECONDS + 2 for t in real.runs("array"))


def test_accounts_map_to_departments_and_unmapped_is_kept(real: Ingested) -> None:
    departments = {row["account"]: row["department"] for row in real.usage.to_dicts()}
    assert departments == {"vis-train": "vision", "nlp-pretrain": "nlp", "legacy-ml": "unmapped"}
    assert {row["gpu_model"] for row in real.usage.to_dicts() if row["hosts"]} == {"H200"}


def test_running_and_pending_rows_while_gpus_are_busy(real: Ingested) -> None:
    rows = {row["job_name"]: row for row in real.busy.to_dicts()}
    assert set(rows) == {spec.name for spec in MIX if spec.in_window}
    for spec in FILL:  # End=Unknown: open runs
        row = rows[spec.name]
        assert (row["state"], row["is_open"], row["end_time"], row["gpus"]) == ("RUNNING", True, None, spec.gpus)
    for spec in (s for s in QUEUED if s.in_window):  # Start=Unknown: GPUs from ReqTRES
        row = rows[spec.name]
        assert (row["state"], row["start_time"], row["gpus"]) == ("PENDING", None, spec.gpus), spec.name
    array = rows["array"]
    master = real.mix.ids["array"]
    assert (array["job_id"], array["job_id_raw"], array["array_job_id"], array["array_task_id"]) == (
        f"{master}_[1-3]",
        master,
        master,
        "[1-3]",
    )


# sacct --json renders a few fields differently in 22.05 (docs/slurm.md "sacct --json"):
# who cancelled (user name, not uid), the exit code of a failed batch script (0:0 in the JSON),
# and the node count of a job that never started (0, not the requested count).
JSON_DIFFERENCES = ("state_detail", "exit_code")


def test_json_gives_the_same_runs_as_parsable2_including_dirty_job_names(real: Ingested) -> None:
    cluster = real.cluster
    sbatch = [
        _binary("sbatch"),
        "--parsable",
        f"--chdir={cluster.layout.jobs}",
        "--output=/dev/null",
        "--gres=gpu:1",
        "--account=vis-train",
        "--wrap=sleep 1",
    ]
    ids = []
    for name in (b"a|b||c", b"caf\xe9-train"):  # a name holding the delimiter; one that is not UTF-8
        done = subprocess.run([*sbatch, b"--job-name=" + name], env=cluster.env, capture_output=True, check=True)
        ids.append(done.stdout.decode().strip().split(";")[0])
    cluster.wait_done(ids, timeout=60)
    began = real.mix.began
    deadline = time.monotonic() + 30
    while True:  # slurmdbd fills a job's Eligible (which window queries select on) a little later
        ended = datetime.now(UTC).replace(tzinfo=None, microsecond=0) + timedelta(seconds=1)
        listed = run_sacct(cluster.sacct_command, began, ended, cluster.cluster_name)
        if all(f"\n{job}|{job}|".encode() in listed for job in ids) or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    staged = {}
    for as_json in (False, True):
        output = run_sacct(cluster.sacct_command, began, ended, cluster.cluster_name, json_output=as_json)
        raw, bad_lines = parse_sacct_output(output, source="sacct", cluster=CLUSTER, day=began.date(), has_header=False)
        jobs, bad_rows = stg_slurm__jobs(raw, began, ended)
        assert bad_lines.is_empty() and bad_rows.is_empty(), (bad_lines, bad_rows)
        staged[as_json] = (
            jobs.with_columns(
                # a never-started job: --parsable2 prints the requested node count, the JSON 0
                n_nodes=pl.when(pl.col("start_time").is_null()).then(None).otherwise(pl.col("n_nodes"))
            )
            .drop(JSON_DIFFERENCES)
            .sort("job_id_raw", "start_time", nulls_last=True)
        )
    text, structured = staged[False], staged[True]
    assert text.height == structured.height >= 12
    assert text.to_dicts() == structured.to_dicts()
    names = dict(text.select("job_id_raw", "job_name").iter_rows())
    # Slurm 22.05 itself prints '?' for the byte that is not UTF-8, in both formats; a file or a
    # Slurm that passes the byte through is decoded with U+FFFD (tests/integration/test_dirty_accounting.py)
    assert [names[i] for i in ids] == ["a|b||c", "caf?-train"]
    assert text.filter(pl.col("job_id_raw").is_in(ids))["gpus"].to_list() == [1.0, 1.0]


def test_scontrol_node_command_mode_reads_the_node_and_its_gpus(real: Ingested) -> None:
    command = shlex.join(["env", f"SLURM_CONF={real.cluster.env['SLURM_CONF']}", _binary("scontrol")])
    text, read_at = run_scontrol_nodes(command)
    rows, rejects = parse_scontrol_nodes(text, source="scontrol", cluster=CLUSTER, read_at=read_at)
    assert rejects.is_empty(), rejects
    got = [(r["hostname"], r["gpu_type"], r["mig_profile"], r["gpus"], r["state"]) for r in rows.to_dicts()]
    assert got == [("localhost", "h200", None, 8, "IDLE")]
    assert abs((datetime.now(UTC).replace(tzinfo=None) - read_at).total_seconds()) < 60
