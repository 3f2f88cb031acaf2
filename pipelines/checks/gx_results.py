"""GX validation results -> Dagster AssetCheckResults with JSON-safe failure details."""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import date, datetime
from typing import Any

import dagster as dg
import pandas as pd
from great_expectations.core.expectation_validation_result import ExpectationSuiteValidationResult

PARTIAL_VALUES_KEPT = 10
Severity = dg.AssetCheckSeverity


def check_result(
    result: ExpectationSuiteValidationResult,
    asset_key: dg.AssetKey | Sequence[str],
    check_name: str,
    severity: Severity,
    rows: int,
    started: float,
    extra: dict[str, Any],
) -> dg.AssetCheckResult:
    failed = [_failure(item) for item in result.results if not item.success]
    metadata = {
        **extra,
        "suite": result.suite_name,
        "expectations": len(result.results),
        "failed_count": len(failed),
        "failed_expectations": failed,
        "evaluated_rows": rows,
        "run_seconds": since(started),
    }
    return dg.AssetCheckResult(
        passed=bool(result.success),
        asset_key=asset_key,
        check_name=check_name,
        severity=severity,
        description=describe_failures(result.suite_name, failed, len(result.results), rows) if failed else None,
        metadata=metadata,
    )


EXAMPLES_SHOWN = 5


def describe_failures(suite: str, failed: Sequence[dict[str, Any]], expectations: int, rows: int) -> str:
    """What a person reads: the suite, each failed expectation with its counts and up to
    EXAMPLES_SHOWN offending values (GX's partial unexpected list) or the observed value."""
    parts = [f"suite {suite}: {len(failed)} of {expectations} expectations failed over {rows:,} rows"]
    for item in failed:
        text = item["expectation"]
        if "unexpected_count" in item:
            share = item.get("unexpected_percent")
            text += f": {item['unexpected_count']:,} unexpected" + (f" ({share:.4g}%)" if share is not None else "")
        if values := item.get("partial_unexpected_list"):
            text += ", e.g. " + ", ".join(_show(value) for value in values[:EXAMPLES_SHOWN])
        elif "observed_value" in item:
            text += f", observed {item['observed_value']!r}"
        if "exception" in item:
            text += f", error: {item['exception']}"
        parts.append(text)
    return "; ".join(parts)


def _show(value: Any) -> str:
    """A value as a person reads it: strings quoted, pairs in parentheses, records as key=value."""
    if isinstance(value, (list, tuple)):
        return "(" + ", ".join(_show(v) for v in value) + ")"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}={_show(v)}" for k, v in value.items()) + "}"
    plain = _plain(value)
    return repr(plain) if isinstance(plain, str) else str(plain)


def since(started: float) -> float:
    return round(time.perf_counter() - started, 4)


def _failure(item: Any) -> dict[str, Any]:
    config = item.expectation_config
    column = config.kwargs.get("column")
    found = item.result or {}
    failure: dict[str, Any] = {"expectation": f"{config.type}({column})" if column else config.type}
    for key in ("unexpected_count", "unexpected_percent", "observed_value"):
        if key in found:
            failure[key] = _plain(found[key])
    if "partial_unexpected_list" in found:
        kept = found["partial_unexpected_list"][:PARTIAL_VALUES_KEPT]
        failure["partial_unexpected_list"] = [_plain(value) for value in kept]
    if errors := _exception_messages(item.exception_info):
        failure["exception"] = "; ".join(errors)[:500]
    return failure


def _exception_messages(info: Any) -> list[str]:
    """GX reports one error dict, or a dict of them keyed by the metric that raised."""
    if not isinstance(info, dict):
        return []
    if "raised_exception" in info:
        return [str(info.get("exception_message"))] if info["raised_exception"] else []
    return [message for nested in info.values() for message in _exception_messages(nested)]


def _plain(value: Any) -> Any:
    """A JSON-safe version of a GX observed value (numpy scalars, dates; NaN/NaT/NA -> None)."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if not isinstance(value, dict) and pd.isna(value):
        return None
    if isinstance(value, float):
        return value
    item = getattr(value, "item", None)
    return _plain(item()) if callable(item) and not isinstance(value, (date, datetime)) else str(value)
