"""Reading a config file: TOML -> validated ``Config``, or a ``ConfigError`` listing every problem."""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from config.errors import ConfigError, Problem, describe
from config.models import Config

EXAMPLE_CONFIG = Path(__file__).resolve().parent / "examples" / "cardhours.example.toml"


def load_config(path: str | Path) -> Config:
    """Read, parse and validate a TOML config file.

    Relative paths in it (warehouse.path, reports.dir, clusters[].metrics.path,
    clusters[].slurm.sacct_file, clusters[].prometheus.ca_bundle) are resolved against the
    file's directory, made absolute; ``~`` is expanded. Raises ``ConfigError``.
    """
    path = Path(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise ConfigError(path, [Problem("", "file not found")]) from None
    except IsADirectoryError:
        raise ConfigError(path, [Problem("", "is a directory, not a config file")]) from None
    except OSError as exc:
        raise ConfigError(path, [Problem("", f"cannot read: {exc.strerror or exc}")]) from exc
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ConfigError(path, [Problem("", f"not UTF-8 text: {exc.reason} at byte {exc.start}")]) from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(path, [Problem("", f"invalid TOML: {exc}")]) from exc
    return parse_config(data, base_dir=path.absolute().parent, source=path)


def parse_config(
    data: Mapping[str, Any], *, base_dir: str | Path | None = None, source: str | Path = "<config>"
) -> Config:
    """Validate an already parsed config. Relative paths are joined to ``base_dir`` when
    given (kept as they are otherwise); ``source`` names the config in error messages."""
    context = {"base_dir": Path(base_dir) if base_dir is not None else None}
    try:
        return Config.model_validate(data, context=context)
    except ValidationError as exc:
        raise ConfigError(source, describe(exc, Config)) from exc
