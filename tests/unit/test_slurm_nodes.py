"""sources/slurm_nodes.py on real ``scontrol show node --oneliner`` output (Slurm 22.05.8,
tests/fixtures/slurm/downtime/) and on lines derived from it with other GRES layouts."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from sources.slurm_nodes import SlurmNodesError, parse_scontrol_nodes, read_scontrol_nodes_file, run_scontrol_nodes

FIXTURES = Path(__file__).parents[1] / "fixtures" / "slurm" / "downtime"
READ_AT = datetime(2026, 12, 2, 15, 40)
STATES = {
    "idle": "IDLE",
    "drained": "IDLE+DRAIN",
    "draining": "MIXED+DRAIN",
    "maint_drained": "IDLE+DRAIN+MAINTENANCE+RESERVED",
    "reserved": "MIXED",
}


def _line(gres: str) -> str:
    """The recorded drained node's line with another ``Gres=``."""
    line = (FIXTURES / "scontrol_node_drained.txt").read_text().splitlines()[0]
    return line.replace("Gres=gpu:h200:8", f"Gres={gres}")


def _parse(text: str):
    return parse_scontrol_nodes(text, source="nodes.txt", cluster="c1", read_at=READ_AT)


@pytest.mark.parametrize("moment", sorted(STATES))
def test_recorded_nodes_read_as_eight_h200_with_their_state(moment: str) -> None:
    rows, rejects = read_scontrol_nodes_file(FIXTURES / f"scontrol_node_{moment}.txt", cluster="c1", read_at=READ_AT)
    assert rejects.is_empty()
    (row,) = rows.to_dicts()
    assert (row["hostname"], row["gpu_type"], row["mig_profile"], row["gpus"]) == ("localhost", "h200", None, 8)
    assert (row["state"], row["read_at"], row["line_no"], row["cluster"]) == (STATES[moment], READ_AT, 1, "c1")
    assert row["source"].endswith(f"scontrol_node_{moment}.txt")


def test_reason_runs_to_the_end_of_the_line_and_values_keep_their_spaces() -> None:
    rows, _ = read_scontrol_nodes_file(FIXTURES / "scontrol_node_drained.txt", cluster="c1", read_at=READ_AT)
    assert rows["reason"].to_list() == ["cardhours test: drain idle node [root@2026-12-02T15:39:20]"]
    idle, _ = read_scontrol_nodes_file(FIXTURES / "scontrol_node_idle.txt", cluster="c1", read_at=READ_AT)
    assert idle["reason"].to_list() == [""]


def test_file_mode_reads_at_the_file_time_unless_told() -> None:
    path = FIXTURES / "scontrol_node_idle.txt"
    rows, _ = read_scontrol_nodes_file(path, cluster="c1")
    assert rows["read_at"].to_list() == [datetime.fromtimestamp(int(os.stat(path).st_mtime), UTC).replace(tzinfo=None)]


def test_mig_untyped_and_several_types_give_one_row_each() -> None:
    rows, rejects = _parse(_line("gpu:a100:2,gpu:a100_3g.20gb:2(S:0,1),gpu:1g.10gb+me:1,shard:8,gpu:4"))
    assert rejects.is_empty()
    got = [(r["gpu_type"], r["mig_profile"], r["gpus"]) for r in rows.to_dicts()]
    assert got == [("a100", None, 2), ("a100_3g.20gb", "3g.20gb", 2), ("1g.10gb+me", "1g.10gb+me", 1), (None, None, 4)]


def test_mig_types_read_in_any_case_and_after_any_separator() -> None:
    rows, rejects = _parse(_line("gpu:a100-3g.20gb:2,gpu:A100_3G.20GB:2,gpu:a100.1g.10gb:3"))
    assert rejects.is_empty()
    assert [(r["mig_profile"], r["gpus"]) for r in rows.to_dicts()] == [("3g.20gb", 2), ("3g.20gb", 2), ("1g.10gb", 3)]


def test_a_type_naming_a_mig_profile_it_cannot_read_is_quarantined_not_counted_whole() -> None:
    for gres in ("gpu:mig3g.20gbx:2", "gpu:a100_1c.3g.20gb:3"):  # a compute instance is a share of one
        rows, rejects = _parse(_line(gres))
        assert rows.is_empty() and "names a MIG profile cardhours cannot read" in rejects["reason"][0], gres


def test_a_node_without_gpus_is_still_a_row() -> None:
    rows, _ = _parse(_line("(null)") + "\n" + _line("shard:8"))
    assert [(r["gpu_type"], r["gpus"], r["line_no"]) for r in rows.to_dicts()] == [(None, 0, 1), (None, 0, 2)]


def test_bad_lines_are_quarantined_with_file_and_line() -> None:
    good = _line("gpu:h200:8")
    text = "\n".join([good, "Arch=x86_64 Gres=gpu:h200:8 State=IDLE", _line("gpu:h200:x"), "", good])
    rows, rejects = _parse(text)
    assert rows["line_no"].to_list() == [1, 5]
    assert rejects.select("location", "reason", "source").rows() == [
        ("nodes.txt:2", "no NodeName= field", "slurm_nodes"),
        ("nodes.txt:3", "GPU GRES 'gpu:h200:x' is not gpu[:type]:count", "slurm_nodes"),
    ]
    assert rejects["n_rows"].to_list() == [1, 1]


def test_missing_file_and_command_are_named() -> None:
    with pytest.raises(SlurmNodesError, match="not found: /nonexistent/nodes.txt"):
        read_scontrol_nodes_file("/nonexistent/nodes.txt", cluster="c1")
    with pytest.raises(SlurmNodesError, match="'/nonexistent/scontrol'"):
        run_scontrol_nodes("/nonexistent/scontrol")
