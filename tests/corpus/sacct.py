"""Bad-input cases of Slurm accounting: saved ``--parsable2`` and ``--json`` files read and staged
as the pipeline does it (``parse_sacct_output`` -> ``stg_slurm__jobs`` with an 8-GPU node
capacity), October 2026 as the billing window."""

from __future__ import annotations

import json
from datetime import date, datetime

import polars as pl
import pytest

from contracts.schemas import SACCT_FIELDS
from sources.sacct import SacctError, parse_sacct_output
from tests.corpus import Case
from transforms.staging.stg_slurm__jobs import stg_slurm__jobs

WINDOW = (datetime(2026, 10, 1), datetime(2026, 11, 1))
CAPACITY = pl.DataFrame({"cluster": ["c1"], "max_node_gpus": [8.0]})
HEADER = "|".join(SACCT_FIELDS).encode()
BASE = {
    "JobID": "100",
    "JobIDRaw": "100",
    "JobName": "train",
    "User": "alice",
    "Account": "physics",
    "Partition": "gpu",
    "QOS": "normal",
    "State": "COMPLETED",
    "ExitCode": "0:0",
    "Submit": "2026-10-05T00:00:00",
    "Eligible": "2026-10-05T00:00:00",
    "Start": "2026-10-05T01:00:00",
    "End": "2026-10-05T03:00:00",
    "ElapsedRaw": "7200",
    "Timelimit": "1-00:00:00",
    "NNodes": "1",
    "NodeList": "gpu-01",
    "AllocTRES": "cpu=8,gres/gpu:h100=2,gres/gpu=2,node=1",
    "ReqTRES": "cpu=8,gres/gpu=2,node=1",
    "Cluster": "c1",
}  # fmt: skip  (one sacct record, several fields a line)


def line(names: list[str] | None = None, **fields: str | bytes) -> bytes:
    values = {**BASE, **fields}
    return b"|".join(v if isinstance(v, bytes) else str(v).encode() for v in (values[n] for n in names or SACCT_FIELDS))


def read(data: bytes, source: str = "sacct.txt") -> tuple[pl.DataFrame, pl.DataFrame]:
    """(staged runs, every quarantine row: lines that did not split and rows staging refused)."""
    raw, bad_lines = parse_sacct_output(data, source=source, cluster="c1", day=date(2026, 10, 5), has_header=True)
    jobs, bad_rows = stg_slurm__jobs(raw, *WINDOW, max_node_gpus=CAPACITY)
    return jobs, pl.concat([bad_lines, bad_rows])


def file(*lines: bytes, header: bytes = HEADER) -> bytes:
    return b"\n".join([header, *lines]) + b"\n"


def gpu_hours(jobs: pl.DataFrame) -> float:
    seconds = (pl.col("end_time") - pl.col("start_time")).dt.total_seconds()
    return round(jobs.select((pl.col("gpus") * seconds / 3600).sum()).item(), 6)


def billed(data: bytes, hours: float, **staged: object):
    def check() -> None:
        jobs, rejects = read(data)
        assert rejects.is_empty(), rejects.to_dicts()
        assert gpu_hours(jobs) == hours
        for column, value in staged.items():
            assert jobs[column].to_list() == [value], (column, jobs[column].to_list())

    return check


def quarantined(data: bytes, reason: str, location: str = "sacct.txt:2"):
    def check() -> None:
        jobs, rejects = read(data + line(JobID="101", JobIDRaw="101") + b"\n")
        assert jobs["job_id"].to_list() == ["101"]  # the good row still bills
        assert rejects.select("location", "reason").rows() == [(location, reason)]

    return check


def refused(data: bytes, message: str):
    def check() -> None:
        with pytest.raises(SacctError) as info:
            read(data)
        assert str(info.value).startswith(message), str(info.value)

    return check


def _json(jobs: list[dict], errors: list | None = None) -> bytes:
    return json.dumps({"meta": {}, "errors": errors or [], "jobs": jobs}).encode()


def json_job(**fields: object) -> dict:
    job = {
        "job_id": 100,
        "name": "train",
        "user": "alice",
        "account": "physics",
        "partition": "gpu",
        "qos": "normal",
        "state": {"current": "COMPLETED", "reason": "None"},
        "exit_code": {"status": "SUCCESS", "return_code": 0},
        "time": {
            "submission": 1791162000,
            "eligible": 1791162000,
            "start": 1791165600,
            "end": 1791172800,
            "elapsed": 7200,
            "limit": 1440,
        },
        "allocation_nodes": 1,
        "nodes": "gpu-01",
        "cluster": "c1",
        "array": {"job_id": 0, "task_id": None},
        "het": {"job_id": 0, "job_offset": None},
        "tres": {"allocated": [{"type": "gres", "name": "gpu", "id": 1001, "count": 2}], "requested": []},
        "steps": [],
    }  # fmt: skip  (a 22.05 sacct --json job, several keys a line)
    return job | fields


def _headers_reordered() -> bytes:
    names = list(reversed(SACCT_FIELDS))
    return file(line(names), header="|".join(names).encode())


def _header_with_extras() -> bytes:
    names = ["WCKey", *SACCT_FIELDS, "Comment"]
    return file(line(names, WCKey="w", Comment="ok"), header="|".join(names).encode())


def _two_days_same_run():
    def check() -> None:
        first, _ = parse_sacct_output(
            file(line(End="Unknown", State="RUNNING")),
            source="d5.txt",
            cluster="c1",
            day=date(2026, 10, 5),
            has_header=True,
        )
        second, _ = parse_sacct_output(
            file(line()), source="d6.txt", cluster="c1", day=date(2026, 10, 6), has_header=True
        )
        jobs, rejects = stg_slurm__jobs(pl.concat([first, second]), *WINDOW, max_node_gpus=CAPACITY)
        assert rejects.is_empty() and gpu_hours(jobs) == 4.0 and jobs["state"].to_list() == ["COMPLETED"]

    return check


def _crlf() -> None:
    data = file(line()).replace(b"\n", b"\r\n")
    billed(data, 4.0)()
    raw, _ = parse_sacct_output(data, source="sacct.txt", cluster="c1", day=date(2026, 10, 5), has_header=True)
    assert raw["slurm_cluster"].to_list() == ["c1"]


def _json_bad_entry() -> None:
    jobs, rejects = read(_json([{k: v for k, v in json_job().items() if k != "job_id"}, json_job(job_id=101)]))
    assert jobs["job_id"].to_list() == ["101"]
    assert rejects.select("location", "reason").rows() == [
        ("sacct.txt:1", "job entry cannot be read (KeyError: 'job_id')")
    ]


NOT_JSON = b'{"jobs": [ {"job_id": 1'
NEWER_NUMBERS = json_job(
    time={
        "submission": 1791162000,
        "eligible": 1791162000,
        "start": 1791165600,
        "end": 1791172800,
        "elapsed": 7200,
        "limit": {"set": True, "infinite": False, "number": 1440},
    }
)

CASES: list[Case] = [
    Case(
        "sacct-clean-baseline",
        "sacct",
        "a COMPLETED job, 2 GPUs, 01:00-03:00",
        "billed",
        "4.0 GPU-hours",
        billed(file(line()), 4.0),
    ),
    Case(
        "sacct-pipe-in-job-name",
        "sacct",
        r"JobName `a\|b` (21 fields)",
        "repaired",
        r"4.0 GPU-hours, job name `a\|b`, read_note says it was rebuilt",
        billed(file(line(JobName="a|b")), 4.0, job_name="a|b"),
    ),
    Case(
        "sacct-pipes-only-job-name",
        "sacct",
        r"JobName `\|\|\|` (23 fields)",
        "repaired",
        r"4.0 GPU-hours, job name `\|\|\|`",
        billed(file(line(JobName="|||")), 4.0, job_name="|||"),
    ),
    Case(
        "sacct-latin1-job-name",
        "sacct",
        "JobName `caf\\xe9` (Latin-1 byte)",
        "repaired",
        "4.0 GPU-hours, job name `caf\N{REPLACEMENT CHARACTER}`, original bytes kept in raw_line",
        billed(file(line(JobName=b"caf\xe9")), 4.0, job_name="caf\N{REPLACEMENT CHARACTER}"),
    ),
    Case(
        "sacct-bad-utf8-account",
        "sacct",
        "Account with a stray byte 0xff",
        "repaired",
        "4.0 GPU-hours, account `phys\N{REPLACEMENT CHARACTER}cs`",
        billed(file(line(Account=b"phys\xffcs")), 4.0, account="phys\N{REPLACEMENT CHARACTER}cs"),
    ),
    Case(
        "sacct-crlf-line-ends",
        "sacct",
        "a file saved with CRLF line ends",
        "billed",
        "4.0 GPU-hours, no `\\r` kept",
        _crlf,
    ),
    Case(
        "sacct-header-reordered",
        "sacct",
        "header columns in reverse order",
        "billed",
        "4.0 GPU-hours",
        billed(_headers_reordered(), 4.0),
    ),
    Case(
        "sacct-header-extra-columns",
        "sacct",
        "header with WCKey and Comment besides ours",
        "billed",
        "4.0 GPU-hours; extra columns ignored",
        billed(_header_with_extras(), 4.0),
    ),
    Case(
        "sacct-header-missing-column",
        "sacct",
        "header without AllocTRES",
        "refused",
        "`sacct.txt:1: required column(s) AllocTRES missing from the header`",
        refused(file(header=HEADER.replace(b"|AllocTRES", b"")), "sacct.txt:1: required column(s) AllocTRES missing"),
    ),
    Case(
        "sacct-empty-file",
        "sacct",
        "an empty saved file",
        "refused",
        "`sacct.txt: empty file, expected a header line`",
        refused(b"", "sacct.txt: empty file, expected a header line"),
    ),
    Case(
        "sacct-short-line",
        "sacct",
        "a line cut after 3 fields",
        "quarantined",
        "SHORT_LINE: `line has 3 fields, expected 20` at `sacct.txt:2`; the next job bills",
        quarantined(file(b"13|13|broken"), "line has 3 fields, expected 20"),
    ),
    Case(
        "sacct-runaway-cancelled",
        "sacct",
        "CANCELLED, End `Unknown`, time limit 03:00:00",
        "billed",
        "6.0 GPU-hours (to its time limit), not to the month end; end_inferred_from `time_limit`",
        billed(
            file(line(State="CANCELLED by 1000", End="Unknown", Timelimit="03:00:00")),
            6.0,
            end_inferred_from="time_limit",
        ),
    ),
    Case(
        "sacct-runaway-unlimited",
        "sacct",
        "FAILED, End `Unknown`, time limit UNLIMITED, started Oct 31 20:00",
        "billed",
        "8.0 GPU-hours (to the end of October); end_inferred_from `month_end`",
        billed(
            file(line(State="FAILED", Start="2026-10-31T20:00:00", End="Unknown", Timelimit="UNLIMITED")),
            8.0,
            end_inferred_from="month_end",
        ),
    ),
    Case(
        "sacct-completed-without-start",
        "sacct",
        "COMPLETED, Start `None`, ElapsedRaw 7200",
        "quarantined",
        "START_MISSING, not billed 0 silently",
        quarantined(file(line(Start="None")), "START_MISSING: state COMPLETED, ElapsedRaw 7200, but no Start ('None')"),
    ),
    Case(
        "sacct-end-before-start",
        "sacct",
        "End 00:30, Start 01:00",
        "quarantined",
        "END_BEFORE_START naming both",
        quarantined(
            file(line(End="2026-10-05T00:30:00")),
            "END_BEFORE_START: End 2026-10-05T00:30:00 is before Start 2026-10-05T01:00:00",
        ),
    ),
    Case(
        "sacct-gpus-over-node",
        "sacct",
        "64 GPUs on one 8-GPU node",
        "quarantined",
        "GPUS_OVER_NODES",
        quarantined(
            file(line(AllocTRES="gres/gpu=64")), "GPUS_OVER_NODES: 64.0 GPUs on 1 node(s) of at most 8.0 GPUs each"
        ),
    ),
    Case(
        "sacct-absurd-gpu-count",
        "sacct",
        "`gres/gpu=99999999999`",
        "quarantined",
        "ABSURD_COUNT, no Int32 overflow",
        quarantined(
            file(line(AllocTRES="gres/gpu=99999999999")),
            "alloc_tres: ABSURD_COUNT: GPU count 99999999999 in 'gres/gpu=99999999999' is beyond any cluster",
        ),
    ),
    Case(
        "sacct-absurd-node-count",
        "sacct",
        "NNodes 99999999999",
        "quarantined",
        "ABSURD_COUNT",
        quarantined(file(line(NNodes="99999999999")), "n_nodes: ABSURD_COUNT: 99999999999 nodes"),
    ),
    Case(
        "sacct-unknown-state",
        "sacct",
        "State `LAUNCH_FAILED` (not in 22.05)",
        "warned",
        "4.0 GPU-hours, state kept; the unknown_slurm_states check warns",
        billed(file(line(State="LAUNCH_FAILED")), 4.0, state="LAUNCH_FAILED"),
    ),
    Case(
        "sacct-unparsable-time",
        "sacct",
        "Start `2026-13-01T00:00:00`",
        "quarantined",
        "UNPARSABLE_FIELD naming the value",
        quarantined(file(line(Start="2026-13-01T00:00:00")), "start_time: cannot parse time '2026-13-01T00:00:00'"),
    ),
    Case(
        "sacct-unparsable-tres",
        "sacct",
        "`gres/gpu=two`",
        "quarantined",
        "UNPARSABLE_FIELD naming the item",
        quarantined(file(line(AllocTRES="gres/gpu=two")), "alloc_tres: bad GPU count in 'gres/gpu=two'"),
    ),
    Case(
        "sacct-unbalanced-hostlist",
        "sacct",
        "NodeList `gpu-[01-`",
        "quarantined",
        "UNPARSABLE_FIELD",
        quarantined(file(line(NodeList="gpu-[01-")), "node_list: unbalanced '[' in hostlist 'gpu-[01-'"),
    ),
    Case(
        "sacct-mig-slice",
        "sacct",
        "`gres/gpu:3g.40gb=1` for 2 h",
        "billed",
        "0.857143 GPU-hours (3/7 x 2 h)",
        billed(file(line(AllocTRES="gres/gpu:3g.40gb=1,gres/gpu=1")), 0.857143, is_mig=True),
    ),
    Case(
        "sacct-cancelled-before-start",
        "sacct",
        "CANCELLED while pending: Start `None`, ElapsedRaw 0",
        "billed",
        "0 GPU-hours, staged as a run that never started",
        billed(
            file(line(State="CANCELLED by 0", Start="None", End="2026-10-05T00:30:00", ElapsedRaw="0")),
            0.0,
            start_time=None,
        ),
    ),
    Case(
        "sacct-same-run-two-days",
        "sacct",
        "RUNNING on Oct 5, COMPLETED on Oct 6 (one run, two days)",
        "billed",
        "4.0 GPU-hours once, final state",
        _two_days_same_run(),
    ),
    Case(
        "sacct-json-pipe-in-name",
        "sacct",
        r"`sacct --json`, name `a\|b`",
        "billed",
        r"4.0 GPU-hours, name `a\|b`",
        billed(_json([json_job(name="a|b")]), 4.0, job_name="a|b"),
    ),
    Case(
        "sacct-json-newer-numbers",
        "sacct",
        "`--json` with 23.02+ numbers `{set, infinite, number}`",
        "billed",
        "4.0 GPU-hours, time limit 86400 s",
        billed(_json([NEWER_NUMBERS]), 4.0, timelimit_seconds=86400),
    ),
    Case(
        "sacct-json-truncated",
        "sacct",
        "a `--json` file cut mid-way",
        "refused",
        "`not JSON at line 1 ...`",
        refused(NOT_JSON, "sacct.txt: not JSON at line 1"),
    ),
    Case(
        "sacct-json-errors",
        "sacct",
        "`--json` whose `errors` list is not empty",
        "refused",
        "`sacct reported errors: ...`",
        refused(_json([], errors=[{"error": "slurmdbd down"}]), "sacct.txt: sacct reported errors"),
    ),
    Case(
        "sacct-json-bad-entry",
        "sacct",
        "`--json` job entry without `job_id`",
        "quarantined",
        "`job entry cannot be read (KeyError: 'job_id')` at `sacct.txt:1`; the next job bills",
        _json_bad_entry,
    ),
]
