"""Building blocks shared by the config models: the strict base model, key-path problems
raised by cross-field validators, and the common field types."""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, ValidationInfo

Loc = tuple[str | int, ...]

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")
_SLUG = re.compile(r"^[a-z0-9][a-z0-9_-]*$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class StrictModel(BaseModel):
    """Base of every config model: unknown keys are errors, no silent type coercion
    (``"30"`` is not an integer), and a validated config is immutable."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class KeyProblems(ValueError):
    """Problems found by a model validator, each at a key path relative to that model.

    Pydantic keeps the exception in the error's ``ctx``; ``config.errors``
    expands it into one line per problem under the model's own location.
    """

    def __init__(self, problems: Sequence[tuple[Loc, str]]) -> None:
        self.problems = list(problems)
        super().__init__("; ".join(f"{format_loc(loc) or '(root)'}: {why}" for loc, why in self.problems))


def raise_problems(problems: Sequence[tuple[Loc, str]]) -> None:
    """Raise ``KeyProblems`` if there is anything to report."""
    if problems:
        raise KeyProblems(problems)


def format_loc(loc: Iterable[str | int]) -> str:
    """``("clusters", 0, "prometheus", "step_seconds")`` -> ``clusters[0].prometheus.step_seconds``.

    Keys that are not bare TOML keys are quoted: ``rates.mig_profile_weights."3g.40gb"``.
    """
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
            continue
        key = part if _BARE_KEY.match(part) else '"' + part.replace('"', '\\"') + '"'
        out += f".{key}" if out else key
    return out


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """``"; did you mean 'x'?"`` for the closest choice, or ``""``."""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


def unknown(kind: str, word: str, choices: Iterable[str]) -> str:
    """Reason text for a reference to something that is not configured."""
    known = sorted(choices)
    hint = did_you_mean(word, known)
    listing = ", ".join(known) if known else "none configured"
    return f"unknown {kind} {word!r}{hint} (known: {listing})"


def _check_slug(value: str) -> str:
    if not _SLUG.match(value):
        raise ValueError(f"must be a lowercase identifier of a-z, 0-9, '_' and '-' (got {value!r})")
    return value


def _check_env_name(value: str) -> str:
    if not _ENV_NAME.match(value):
        raise ValueError("must be the name of an environment variable (letters, digits, '_'), never the secret itself")
    return value


def _check_text(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be empty")
    return value


def _reject_empty_path(value: Any) -> Any:
    if isinstance(value, str) and not value.strip():
        raise ValueError("must not be empty")
    return value


def _resolve_path(value: Path, info: ValidationInfo) -> Path:
    """``~`` is expanded; a relative path is joined to ``context["base_dir"]`` when given."""
    value = value.expanduser()
    base = (info.context or {}).get("base_dir")
    if base is not None and not value.is_absolute():
        return Path(base) / value
    return value


Slug = Annotated[str, AfterValidator(_check_slug)]
Text = Annotated[str, AfterValidator(_check_text)]
# The name of the environment variable holding a secret (a token, a password), never the secret.
EnvVarName = Annotated[str, AfterValidator(_check_env_name)]
ConfigPath = Annotated[Path, Field(strict=False), BeforeValidator(_reject_empty_path), AfterValidator(_resolve_path)]
PositiveInt = Annotated[int, Field(gt=0)]
NonNegativeInt = Annotated[int, Field(ge=0)]
PositiveFloat = Annotated[float, Field(gt=0)]
NonNegativeFloat = Annotated[float, Field(ge=0)]
Ratio = Annotated[float, Field(ge=0, le=1)]
PositiveRatio = Annotated[float, Field(gt=0, le=1)]
