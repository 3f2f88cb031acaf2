"""stg_slurm__jobs: raw sacct rows -> one row per job run, plus quarantined rows."""

from __future__ import annotations

import json
from datetime import date, datetime

import polars as pl
import pytest

from contracts.schemas import QUARANTINE_SCHEMA, RAW_SACCT_SCHEMA, SACCT_FIELDS
from transforms.helpers.slurm_policy import POLICIES, reason_code
from transforms.helpers.slurm_runs import LAST_SAMPLES_SCHEMA
from transforms.staging.stg_slurm__jobs import SCHEMA, stg_slurm__jobs

MARCH = (datetime(2024, 3, 1), datetime(2024, 4, 1))
TRES = "billing=8,cpu=8,gres/gpu:h100=2,gres/gpu=2,mem=64G,node=1"


def line(job_id: str, **fields: str) -> str:
    """A sacct --parsable2 line for a 2-GPU COMPLETED job; ``fields`` override by raw column."""
    values = {
        "job_id": job_id,
        "job_id_raw": job_id,
        "job_name": "train",
        "user_name": "alice",
        "account": "physics",
        "partition_name": "gpu",
        "qos": "normal",
        "state": "COMPLETED",
        "exit_code": "0:0",
        "submit_time": "2024-03-10T00:00:00",
        "eligible_time": "2024-03-10T00:10:00",
        "start_time": "2024-03-10T01:00:00",
        "end_time": "2024-03-10T03:00:00",
        "elapsed_raw": "7200",
        "timelimit": "1-00:00:00",
        "n_nodes": "1",
        "node_list": "gpu-01",
        "alloc_tres": TRES,
        "req_tres": "cpu=8,gres/gpu=2",
        "slurm_cluster": "c1",
    }
    values.update(fields)
    if values["start_time"] in ("Unknown", "None") and "elapsed_raw" not in fields:
        values["elapsed_raw"] = "0"  # as sacct prints it for a job that never started
    return "|".join(values[c] for c in SACCT_FIELDS.values())


def raw(*days: tuple[date, list[str]]) -> pl.DataFrame:
    """RAW_SACCT_SCHEMA rows: for each (day, lines) a partition read from ``sacct-<day>.txt``."""
    rows = []
    for day, lines in days:
        for no, text in enumerate(lines, start=2):
            fields = dict(zip(SACCT_FIELDS.values(), text.split("|"), strict=True))
            rows.append(
                {
                    "cluster": "c1",
                    "day": day,
                    "source": f"sacct-{day}.txt",
                    "line_no": no,
                    **fields,
                    "read_note": None,
                    "raw_line": None,
                }
            )
    return pl.DataFrame(rows, schema=RAW_SACCT_SCHEMA)


def run(*days: tuple[date, list[str]], window: tuple[datetime, datetime] = MARCH, **kwargs):
    return stg_slurm__jobs(raw(*days), *window, **kwargs)


D10, D11, D12 = date(2024, 3, 10), date(2024, 3, 11), date(2024, 3, 12)


def test_allocation_row_parsed_and_steps_counted_not_summed() -> None:
    jobs, rejects = run(
        (
            D10,
            [
                line("100", state="CANCELLED by 0", node_list="gpu-[01-02]", n_nodes="2"),
                line("100.batch", job_id_raw="100.batch", alloc_tres="cpu=8,gres/gpu=2"),
                line("100.extern", job_id_raw="100.extern", alloc_tres="cpu=8,gres/gpu=2"),
                line("100.0", job_id_raw="100.0", alloc_tres="cpu=8,gres/gpu=2"),
            ],
        )
    )
    assert rejects.is_empty()
    assert jobs.height == 1
    job = jobs.row(0, named=True)
    assert job | {"hosts": None} == {
        "cluster": "c1",
        "scheduler": "slurm",
        "job_id": "100",
        "job_id_raw": "100",
        "array_job_id": None,
        "array_task_id": None,
        "het_job_id": None,
        "het_offset": None,
        "job_name": "train",
        "user_name": "alice",
        "account": "physics",
        "partition_name": "gpu",
        "qos": "normal",
        "state": "CANCELLED",
        "state_detail": "by 0",
        "exit_code": "0:0",
        "submit_time": datetime(2024, 3, 10),
        "eligible_time": datetime(2024, 3, 10, 0, 10),
        "start_time": datetime(2024, 3, 10, 1),
        "end_time": datetime(2024, 3, 10, 3),
        "is_open": False,
        "gpus": 2.0,
        "gpu_slots": 2,
        "gpu_type": "h100",
        "is_mig": False,
        "n_nodes": 2,
        "hosts": None,
        "timelimit_seconds": 86400,
        "n_steps": 3,
        "end_inferred_from": None,
    }
    assert job["hosts"] == ["gpu-01", "gpu-02"]


def test_output_schema_is_exact_even_when_empty() -> None:
    jobs, rejects = stg_slurm__jobs(pl.DataFrame(schema=RAW_SACCT_SCHEMA), *MARCH)
    assert jobs.schema == pl.Schema(SCHEMA)
    assert rejects.schema == pl.Schema(QUARANTINE_SCHEMA)
    jobs, _ = run((D10, [line("1")]))
    assert jobs.schema == pl.Schema(SCHEMA)


def test_array_het_and_pending_range_ids() -> None:
    pending = dict(
        state="PENDING",
        start_time="Unknown",
        end_time="Unknown",
        node_list="None assigned",
        alloc_tres="",
        req_tres="cpu=1,gres/gpu:3g.40gb=1,gres/gpu=1",
    )
    jobs, _ = run(
        (
            D10,
            [
                line("200_4", job_id_raw="204"),
                line("200_[5-1024%8]", job_id_raw="200", **pending),
                line("300+1", job_id_raw="301"),
            ],
        )
    )
    by_id = {r["job_id"]: r for r in jobs.iter_rows(named=True)}
    assert (by_id["200_4"]["array_job_id"], by_id["200_4"]["array_task_id"]) == ("200", "4")
    ranged = by_id["200_[5-1024%8]"]
    assert (ranged["array_job_id"], ranged["array_task_id"], ranged["job_id_raw"]) == ("200", "[5-1024%8]", "200")
    # nothing allocated yet: GPUs come from ReqTRES; a pending run is not open
    assert (ranged["gpus"], ranged["gpu_slots"], ranged["is_mig"]) == (pytest.approx(3 / 7), 1, True)
    assert (ranged["start_time"], ranged["is_open"], ranged["hosts"]) == (None, False, [])
    assert (by_id["300+1"]["het_job_id"], by_id["300+1"]["het_offset"]) == ("300", 1)


def test_dedup_across_day_partitions_keeps_latest_day() -> None:
    running = line("100", state="RUNNING", end_time="Unknown")
    done = line("100", state="COMPLETED", end_time="2024-03-11T05:00:00")
    jobs, _ = run(
        (D10, [running, line("100.batch", job_id_raw="100.batch", end_time="Unknown")]),
        (D11, [done, line("100.batch", job_id_raw="100.batch", end_time="2024-03-11T05:00:00")]),
    )
    assert jobs.select("state", "end_time", "is_open", "n_steps").rows() == [
        ("COMPLETED", datetime(2024, 3, 11, 5), False, 1)
    ]
    # the same rows in the other order of days: the latest day still wins
    jobs, _ = run((D11, [done]), (D10, [running]))
    assert jobs.get_column("state").to_list() == ["COMPLETED"]
    # only the first day seen: still running, open
    jobs, _ = run((D10, [running]))
    assert jobs.select("state", "end_time", "is_open").rows() == [("RUNNING", None, True)]


def test_a_day_read_again_after_the_run_ended_wins_over_a_later_day_read_before() -> None:
    """Late accounting: day 10 landed while the job ran, day 11 too; day 10 was read again
    (lookback) after the job ended. The run is billed once, with its final End."""
    running = line("100", state="RUNNING", end_time="Unknown")
    done = line("100", state="COMPLETED", end_time="2024-03-11T05:00:00")
    for days in [((D10, [done]), (D11, [running])), ((D11, [running]), (D10, [done]))]:
        jobs, _ = run(*days)
        assert jobs.select("job_id_raw", "state", "end_time", "is_open").rows() == [
            ("100", "COMPLETED", datetime(2024, 3, 11, 5), False)
        ]


def test_pending_row_superseded_by_a_later_start() -> None:
    pending = line("100", state="PENDING", start_time="Unknown", end_time="Unknown", alloc_tres="")
    jobs, _ = run(
        (D10, [pending]), (D11, [line("100", start_time="2024-03-11T01:00:00", end_time="2024-03-11T02:00:00")])
    )
    assert jobs.select("state", "start_time").rows() == [("COMPLETED", datetime(2024, 3, 11, 1))]


def test_requeued_runs_stay_distinct_and_keep_their_own_steps() -> None:
    first = dict(start_time="2024-03-10T01:00:00", end_time="2024-03-10T02:00:00")
    second = dict(start_time="2024-03-10T05:00:00", end_time="2024-03-10T06:00:00")
    jobs, _ = run(
        (
            D10,
            [
                line("100", state="REQUEUED", **first),
                line("100.batch", job_id_raw="100.batch", **first),
                line("100.extern", job_id_raw="100.extern", **first),
                line("100", **second),
                line("100.batch", job_id_raw="100.batch", **second),
            ],
        )
    )
    assert jobs.select("state", "start_time", "n_steps").rows() == [
        ("REQUEUED", datetime(2024, 3, 10, 1), 2),
        ("COMPLETED", datetime(2024, 3, 10, 5), 1),
    ]


@pytest.mark.parametrize(
    ("fields", "kept"),
    [
        ({"start_time": "2024-02-20T00:00:00", "end_time": "2024-02-29T23:00:00"}, False),  # ended before
        ({"start_time": "2024-02-29T23:00:00", "end_time": "2024-03-01T00:00:00"}, False),  # ends at start
        ({"start_time": "2024-02-29T23:00:00", "end_time": "2024-03-01T00:00:01"}, True),  # crosses in
        ({"start_time": "2024-03-31T23:00:00", "end_time": "2024-04-01T02:00:00"}, True),  # crosses out
        ({"start_time": "2024-04-01T00:00:00", "end_time": "2024-04-01T02:00:00"}, False),  # after
        ({"state": "RUNNING", "start_time": "2024-02-01T00:00:00", "end_time": "Unknown"}, True),  # still running
        ({"start_time": "2024-03-01T00:00:00", "end_time": "2024-03-01T00:00:00"}, True),  # zero length
        ({"start_time": "2024-04-01T00:00:00", "end_time": "2024-04-01T00:00:00"}, False),  # zero, after
        (
            {"state": "PENDING", "submit_time": "2024-03-05T00:00:00", "start_time": "Unknown", "end_time": "Unknown"},
            True,
        ),
        (
            {"state": "PENDING", "submit_time": "2024-02-05T00:00:00", "start_time": "Unknown", "end_time": "Unknown"},
            False,
        ),
        (
            {
                "state": "CANCELLED",
                "submit_time": "2024-03-05T00:00:00",
                "start_time": "None",
                "end_time": "2024-03-06T00:00:00",
            },
            True,
        ),
    ],
)
def test_window(fields: dict, kept: bool) -> None:
    jobs, rejects = run((D10, [line("100", **fields)]))
    assert rejects.is_empty()
    assert jobs.height == int(kept)


def test_unparseable_rows_go_to_rejects_with_location_reason_and_payload() -> None:
    good = line("100")
    bad_lines = [
        line("101", start_time="2024-13-01T00:00:00"),
        line("102", alloc_tres="cpu=1,gres/gpu=two"),
        line("103", node_list="gpu-[01-"),
        line("10x4"),
        line("105", timelimit="forever"),
        line("106", n_nodes="many"),
    ]
    frame = raw((D10, [good, *bad_lines]))
    jobs, rejects = stg_slurm__jobs(frame, *MARCH)
    assert jobs.get_column("job_id").to_list() == ["100"]
    assert rejects.schema == pl.Schema(QUARANTINE_SCHEMA)
    assert rejects.select("cluster", "source", "partition_key").unique().rows() == [("c1", "sacct", "2024-03-10")]
    assert rejects.get_column("location").to_list() == [f"sacct-{D10}.txt:{n}" for n in range(3, 9)]
    assert rejects.get_column("reason").to_list() == [
        "start_time: cannot parse time '2024-13-01T00:00:00'",
        "alloc_tres: bad GPU count in 'gres/gpu=two'",
        "node_list: unbalanced '[' in hostlist 'gpu-[01-'",
        "job_id: cannot parse '10x4'",
        "timelimit: cannot parse time limit 'forever'",
        "n_nodes: cannot parse 'many'",
    ]
    payload = json.loads(rejects.get_column("payload")[0])
    assert payload["start_time"] == "2024-13-01T00:00:00"
    assert payload["line_no"] == 3 and payload["job_id"] == "101"
    # every raw column, the bytes kept for lines that were not UTF-8 as base64 text
    assert set(payload) == set(RAW_SACCT_SCHEMA) - {"raw_line"} | {"raw_base64"}
    assert payload["raw_base64"] is None


def test_several_bad_fields_are_all_named() -> None:
    _, rejects = run((D10, [line("100", end_time="soon", alloc_tres="gres/gpu=x")]))
    assert rejects.get_column("reason").to_list() == [
        "end_time: cannot parse time 'soon'; alloc_tres: bad GPU count in 'gres/gpu=x'"
    ]


def test_bad_req_tres_matters_only_when_used() -> None:
    jobs, rejects = run((D10, [line("100", req_tres="gres/gpu=?")]))
    assert rejects.is_empty() and jobs.height == 1
    pending = line(
        "101", state="PENDING", start_time="Unknown", end_time="Unknown", alloc_tres="", req_tres="gres/gpu=?"
    )
    _, rejects = run((D10, [pending]))
    assert rejects.get_column("reason").to_list() == ["req_tres: bad GPU count in 'gres/gpu=?'"]


def test_mig_weights_are_passed_through() -> None:
    mig = line("100", alloc_tres="cpu=2,gres/gpu:a100_3g.40gb=2,gres/gpu=2")
    default, _ = run((D10, [mig]))
    weighted, _ = run((D10, [mig]), mig_weights={"3g.40gb": 0.5})
    assert default.select("gpus", "gpu_slots", "gpu_type", "is_mig").row(0) == (
        pytest.approx(6 / 7),
        2,
        "3g.40gb",
        True,
    )
    assert weighted.get_column("gpus").to_list() == [1.0]


# --- impossible and inconsistent records (transforms.helpers.slurm_policy) ---------------------------

CAPACITY = pl.DataFrame({"cluster": ["c1"], "max_node_gpus": [8.0]})


def test_runaway_cancelled_job_is_billed_to_its_time_limit_not_the_month_end() -> None:
    # slurmdbd lost the end of a CANCELLED job: End Unknown. Its 3-hour limit bounds it.
    runaway = line("300", state="CANCELLED by 0", end_time="Unknown", timelimit="03:00:00")
    jobs, rejects = run((D10, [runaway]))
    assert rejects.is_empty()
    assert jobs.select("end_time", "end_inferred_from", "is_open").row(0) == (
        datetime(2024, 3, 10, 4),
        "time_limit",
        False,
    )


def test_runaway_ends_at_its_last_labelled_sample_when_that_comes_first() -> None:
    runaway = line("301", state="FAILED", end_time="Unknown", timelimit="1-00:00:00")
    samples = pl.DataFrame(
        {
            "cluster": ["c1"],
            "job_id_raw": ["301"],
            "start_time": [datetime(2024, 3, 10, 1)],
            "last_sample_end": [datetime(2024, 3, 10, 2, 30)],
        },
        schema=LAST_SAMPLES_SCHEMA,
    )
    jobs, _ = run((D10, [runaway]), last_samples=samples)
    assert jobs.select("end_time", "end_inferred_from").row(0) == (datetime(2024, 3, 10, 2, 30), "last_sample")


def test_runaway_without_limit_or_samples_ends_with_the_month_it_started_in() -> None:
    runaway = line(
        "302", state="COMPLETED", start_time="2024-03-30T00:00:00", end_time="Unknown", timelimit="UNLIMITED"
    )
    jobs, _ = run((D10, [runaway]))
    assert jobs.select("end_time", "end_inferred_from").row(0) == (datetime(2024, 4, 1), "month_end")
    april, _ = run((D10, [runaway]), window=(datetime(2024, 4, 1), datetime(2024, 5, 1)))
    assert april.is_empty()  # never billed again in the next month


def test_a_running_job_is_not_a_runaway() -> None:
    jobs, _ = run((D10, [line("303", state="RUNNING", end_time="Unknown")]))
    assert jobs.select("end_time", "end_inferred_from", "is_open").row(0) == (None, None, True)


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"start_time": "None"}, "START_MISSING: state COMPLETED, ElapsedRaw 0, but no Start ('None')"),
        (
            {"state": "CANCELLED", "start_time": "Unknown", "elapsed_raw": "60"},
            "START_MISSING: state CANCELLED, ElapsedRaw 60, but no Start ('Unknown')",
        ),
        (
            {"end_time": "2024-03-10T00:30:00"},
            "END_BEFORE_START: End 2024-03-10T00:30:00 is before Start 2024-03-10T01:00:00",
        ),
        (
            {"alloc_tres": "gres/gpu=64", "n_nodes": "1", "node_list": "gpu-01"},
            "GPUS_OVER_NODES: 64.0 GPUs on 1 node(s) of at most 8.0 GPUs each",
        ),
        (
            {"alloc_tres": "gres/gpu=99999999999"},
            "alloc_tres: ABSURD_COUNT: GPU count 99999999999 in 'gres/gpu=99999999999' is beyond any cluster",
        ),
        ({"n_nodes": "99999999999"}, "n_nodes: ABSURD_COUNT: 99999999999 nodes"),
    ],
)
def test_impossible_records_are_quarantined_with_code_and_value(fields: dict, expected: str) -> None:
    good = line("400")
    jobs, rejects = run((D10, [line("401", **fields), good]), max_node_gpus=CAPACITY)
    assert jobs["job_id"].to_list() == ["400"]  # the month still builds with the good row
    assert rejects.select("location", "reason").rows() == [("sacct-2024-03-10.txt:2", expected)]
    assert reason_code(expected) in POLICIES


def test_unknown_state_is_staged_as_is() -> None:
    jobs, rejects = run((D10, [line("500", state="LAUNCH_FAILED")]))
    assert rejects.is_empty() and jobs["state"].to_list() == ["LAUNCH_FAILED"]
