"""config: how load errors are reported (several problems, bad TOML, missing file, pickling)."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from config import ConfigError, Problem, load_config
from tests.unit.config_cases import FIXTURES


def test_file_with_several_problems_reports_each_on_its_own_line() -> None:
    path = FIXTURES / "many_problems.toml"
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert str(info.value).splitlines() == [
        f"{path}: clusters[0].prometheus.step_secnds: unknown key; did you mean 'step_seconds'?",
        f"{path}: clusters[0].inventory.node_groups[0].gpus_per_node: "
        "wrong type: must be an integer, got string 'four'",
        f"{path}: flags.memory_held_fraction: must be less than or equal to 1 (got 1.5)",
    ]


def test_invalid_toml_reports_line_and_column() -> None:
    path = FIXTURES / "bad_syntax.toml"
    with pytest.raises(ConfigError) as info:
        load_config(path)
    message = str(info.value)
    assert message.startswith(f"{path}: invalid TOML: ")
    assert "line 4, column" in message
    assert isinstance(info.value, ValueError)


def test_config_error_survives_pickling() -> None:
    error = ConfigError("site.toml", [Problem("rates.currency", "required key is missing"), Problem("", "x")])
    clone = pickle.loads(pickle.dumps(error))
    assert str(clone) == str(error) == "site.toml: rates.currency: required key is missing\nsite.toml: x"
    assert clone.problems == error.problems and clone.source == "site.toml"


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"nope\.toml: file not found$"):
        load_config(tmp_path / "nope.toml")
    with pytest.raises(ConfigError, match="is a directory"):
        load_config(tmp_path)
