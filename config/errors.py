"""``ConfigError``: every problem of a config file, one line each, ``file: key: reason``."""

from __future__ import annotations

import types
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime, time
from pathlib import Path
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError

from config.base import KeyProblems, Loc, did_you_mean, format_loc

# pydantic error type -> what the key should hold
_EXPECTED = {
    "int_type": "an integer",
    "int_from_float": "an integer",
    "float_type": "a number",
    "string_type": "a string",
    "bool_type": "a boolean (true or false)",
    "list_type": "an array",
    "dict_type": "a table",
    "model_type": "a table",
    "model_attributes_type": "a table",
    "path_type": "a path string",
}
_TOML_TYPES: tuple[tuple[type, str], ...] = (
    (bool, "boolean"),
    (int, "integer"),
    (float, "float"),
    (str, "string"),
    (list, "array"),
    (dict, "table"),
    (datetime, "datetime"),
    (date, "date"),
    (time, "time"),
)


@dataclass(frozen=True)
class Problem:
    """One problem: the dotted key path (``""`` for the file as a whole) and the reason."""

    key: str
    reason: str

    def __str__(self) -> str:
        return f"{self.key}: {self.reason}" if self.key else self.reason


class ConfigError(ValueError):
    """A config that cannot be used. ``str()`` is one ``file: key: reason`` line per problem."""

    def __init__(self, source: str | Path, problems: Sequence[Problem]) -> None:
        self.source = str(source)
        self.problems = list(problems)
        super().__init__("\n".join(f"{self.source}: {p}" for p in self.problems))

    def __reduce__(self) -> tuple[type[ConfigError], tuple[str, list[Problem]]]:
        return (ConfigError, (self.source, self.problems))  # picklable across processes


def describe(exc: ValidationError, root: type[BaseModel]) -> list[Problem]:
    """The validation errors of ``root`` as problems, in order, without repeats."""
    problems: list[Problem] = []
    for error in exc.errors(include_url=False):
        loc: Loc = tuple(error["loc"])
        cause = (error.get("ctx") or {}).get("error")
        if isinstance(cause, KeyProblems):
            problems += [Problem(format_loc(loc + sub), reason) for sub, reason in cause.problems]
            continue
        is_key = bool(loc) and loc[-1] == "[key]"
        loc = loc[:-1] if is_key else loc
        reason = _reason(error, loc, root, cause)
        problems.append(Problem(format_loc(loc), f"invalid key: {reason}" if is_key else reason))
    return list(dict.fromkeys(problems))


def _reason(error: Any, loc: Loc, root: type[BaseModel], cause: object) -> str:
    kind, value = error["type"], error.get("input")
    if kind == "missing":
        return "required key is missing"
    if kind == "extra_forbidden":
        fields = _fields_at(root, loc[:-1])
        hint = did_you_mean(str(loc[-1]), fields) if loc else ""
        return f"unknown key{hint}" if hint or not fields else f"unknown key (valid keys: {', '.join(fields)})"
    if cause is not None:
        return str(cause)
    if kind == "too_short":
        wanted = error["ctx"]["min_length"]
        return "must not be empty" if wanted == 1 else f"must have at least {wanted} entries, has {len(value)}"
    if kind in _EXPECTED:
        return f"wrong type: must be {_EXPECTED[kind]}, got {_toml_type(value)} {_short(value)}"
    message = str(error["msg"]).replace("Input should be", "must be", 1)
    if not isinstance(value, (dict, list)):
        message += f" (got {_short(value)})"
    return message


def _toml_type(value: object) -> str:
    return next((name for kind, name in _TOML_TYPES if isinstance(value, kind)), type(value).__name__)


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _unwrap(annotation: Any) -> Any:
    while True:
        origin = get_origin(annotation)
        if origin is Annotated:
            annotation = get_args(annotation)[0]
        elif origin in (Union, types.UnionType):
            annotation = next(a for a in get_args(annotation) if a is not type(None))
        else:
            return annotation


def _fields_at(root: type[BaseModel], loc: Loc) -> list[str]:
    """The keys the model at ``loc`` accepts ([] when ``loc`` is not a model)."""
    annotation: Any = root
    for part in loc:
        annotation = _unwrap(annotation)
        origin = get_origin(annotation)
        if isinstance(annotation, type) and issubclass(annotation, BaseModel) and isinstance(part, str):
            if part not in annotation.model_fields:
                return []
            annotation = annotation.model_fields[part].annotation
        elif origin is list and isinstance(part, int):
            annotation = get_args(annotation)[0]
        elif origin is dict:
            annotation = get_args(annotation)[1]
        else:
            return []
    annotation = _unwrap(annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return list(annotation.model_fields)
    return []
