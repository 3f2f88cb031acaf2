"""Shared helpers for the config tests: the parsed example and edits at dotted key paths."""

from __future__ import annotations

import copy
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest

from config import EXAMPLE_CONFIG, ConfigError, Problem, parse_config

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "config"
EXAMPLE: dict[str, Any] = tomllib.loads(EXAMPLE_CONFIG.read_text())
SOURCE = "site.toml"


def _walk(data: Any, key: str) -> tuple[Any, str | int]:
    """The container holding a dotted key path ("a.b[0].c") and the last step."""
    steps: list[str | int] = []
    for name, index in re.findall(r"([^.\[\]]+)|\[(\d+)\]", key):
        steps.append(int(index) if index else name)
    for step in steps[:-1]:
        data = data[step]
    return data, steps[-1]


def put(key: str, value: Any):
    def change(data: dict[str, Any]) -> None:
        container, last = _walk(data, key)
        container[last] = value

    return change


def drop(key: str):
    def change(data: dict[str, Any]) -> None:
        container, last = _walk(data, key)
        del container[last]

    return change


def rename(key: str, new_name: str):
    def change(data: dict[str, Any]) -> None:
        container, last = _walk(data, key)
        container[new_name] = container.pop(last)

    return change


def append(key: str, value: Any):
    def change(data: dict[str, Any]) -> None:
        container, last = _walk(data, key)
        container[last].append(copy.deepcopy(value(data) if callable(value) else value))

    return change


def example(*changes) -> dict[str, Any]:
    data = copy.deepcopy(EXAMPLE)
    for change in changes:
        change(data)
    return data


def problems_of(data: dict[str, Any]) -> list[Problem]:
    with pytest.raises(ConfigError) as info:
        parse_config(data, source=SOURCE)
    return info.value.problems


NG0 = "clusters[0].inventory.node_groups[0]"
NG1 = "clusters[0].inventory.node_groups[1]"
PROM = "clusters[0].prometheus"
