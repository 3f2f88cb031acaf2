"""flagged_jobs.csv: columns, one line per run, severity, escaping and number format."""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

import polars as pl

from config.policy import FlagsConfig
from contracts.flags import FLAG_REASONS, REASONS
from reports.flagged_jobs_csv import COLUMNS, flagged_jobs_csv
from tests.unit.fct_job_flags_cases import flags, usage_row
from transforms.marts.fct_job_flags import SCHEMA as FLAGS_SCHEMA
from transforms.marts.mart_user_monthly import SCHEMA as USER_SCHEMA


def parsed(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


def test_header_only_when_nothing_is_flagged() -> None:
    assert flagged_jobs_csv(pl.DataFrame(schema=FLAGS_SCHEMA)) == ",".join(COLUMNS) + "\n"
    assert COLUMNS == (
        "cluster",
        "job_id",
        "user",
        "account",
        "department",
        "partition",
        "gpus",
        "gpu_hours",
        "utilization",
        "utilization_signal",
        "reasons",
        "severity",
        "recommendation",
        "idle_cost",
    )


def test_one_line_per_run_with_all_reasons_and_the_highest_severity() -> None:
    rows = [usage_row("1", hours=10.0, util=0.2), usage_row("2", hours=10.0, util=0.1, gpus=2.0, hosts="n1,n2")]
    lines = parsed(flagged_jobs_csv(flags(rows)))
    assert [line["job_id"] for line in lines] == ["2", "1"]  # high first
    two = lines[0]
    assert two["reasons"] == "LOW_UTIL;INPUT_BOUND;MULTINODE_FRAGMENTED"
    assert two["severity"] == "high"
    assert two["recommendation"].startswith("Request fewer GPUs") and "data loader / CPU count" in two["recommendation"]
    assert (two["gpus"], two["gpu_hours"], two["utilization"], two["idle_cost"]) == ("2", "20", "0.1", "36")
    one = lines[1]
    assert one["reasons"] == "LOW_UTIL;INPUT_BOUND;OVERSIZED" and one["severity"] == "medium"
    assert (one["user"], one["account"], one["department"], one["partition"]) == ("alice", "physics", "phys", "gpu")


def test_escaping_and_formula_guard() -> None:
    rows = [
        usage_row("1", util=0.1, user_name='o"brien, jr', account="line\nbreak"),
        usage_row("2", util=0.1, user_name='=HYPERLINK("http://x")', account="-1+1", department="@dept"),
    ]
    text = flagged_jobs_csv(flags(rows))
    assert '"o""brien, jr"' in text and '"line\nbreak"' in text
    lines = {line["job_id"]: line for line in parsed(text)}
    assert lines["1"]["user"] == 'o"brien, jr' and lines["1"]["account"] == "line\nbreak"
    assert lines["2"]["user"] == '\'=HYPERLINK("http://x")'
    assert lines["2"]["account"] == "'-1+1" and lines["2"]["department"] == "'@dept"


def test_numbers_rounded_and_nulls_empty() -> None:
    row = usage_row("1", hours=1.0 / 3, util=0.123456, gpu_model="L40S")  # no rate for L40S
    lines = parsed(flagged_jobs_csv(flags([row], min_runtime_minutes=0)))
    assert (lines[0]["gpu_hours"], lines[0]["utilization"], lines[0]["idle_cost"]) == ("0.333", "0.1235", "")


def _doc_section(heading: str) -> str:
    text = (Path(__file__).parents[2] / "docs" / "marts.md").read_text()
    return text.split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0]


def _doc_columns(heading: str) -> list[str]:
    table = _doc_section(heading).split("\n### ", 1)[0]  # the column table, not the rules' notes
    return [c for c in re.findall(r"^\| ([a-z_0-9]+) \|", table, flags=re.MULTILINE) if c != "column"]


def test_docs_list_the_columns_in_order() -> None:
    assert _doc_columns("marts.fct_job_flags") == list(FLAGS_SCHEMA)
    assert _doc_columns("marts.mart_user_monthly") == list(USER_SCHEMA)
    assert _doc_columns("YYYY-MM/flagged_jobs.csv") == list(COLUMNS)


def test_docs_describe_every_rule_with_its_config_keys() -> None:
    section = _doc_section("marts.fct_job_flags")
    for reason in REASONS:
        assert f"| {reason} |" in section, reason
    for key in FlagsConfig.model_fields:
        assert f"`{key}`" in section or f"flags.{key}" in _doc_section("marts.mart_user_monthly"), key


def test_docs_give_each_rule_its_registered_severity() -> None:
    rules = _doc_section("marts.fct_job_flags").split("\n### The rules\n", 1)[1]
    rows = re.findall(r"^\| ([A-Z_]+)[^|]*\|[^|]*\| ([a-z /]+) \|", rules, flags=re.MULTILINE)
    assert {code: tuple(severity.split(" / ")) for code, severity in rows} == {
        reason.code: reason.severities for reason in FLAG_REASONS
    }


def _same(text: str, default: object) -> bool:
    """A default as docs/marts.md writes it: ``0.80``, ``24``, ``false``, ``"debug"``."""
    if isinstance(default, bool):
        return text == str(default).lower()
    if isinstance(default, str):
        return text == f'"{default}"'
    return float(text) == default


def test_docs_quote_the_declared_defaults() -> None:
    text = _doc_section("marts.fct_job_flags") + _doc_section("marts.mart_user_monthly")
    quoted = re.findall(r"`(?:flags\.)?([a-z_]+)`(?: = | \(default |\s\()([0-9.]+|true|false|\"[a-z]+\")", text)
    defaults = FlagsConfig().model_dump()
    shown = [(key, value) for key, value in quoted if key in defaults]
    assert {key for key, _ in shown} == set(defaults)
    assert [(key, value) for key, value in shown if not _same(value, defaults[key])] == []
