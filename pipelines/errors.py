"""What a person is told when a step fails: the asset's own error, out of Dagster's wrappers.

A failed step's error is Dagster's wrapper (``DagsterExecutionStepExecutionError``,
``DagsterResourceFunctionError``) whose cause is the exception the asset or resource raised.
That exception's own causes (the library error it translated, such as polars' message about a
broken file) stay behind it: the asset's text names the file, the cluster and what to do.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dagster._utils.error import SerializableErrorInfo  # the type of a failure event's error


def asset_error(error: SerializableErrorInfo) -> SerializableErrorInfo:
    """The error the asset (or resource) raised, inside Dagster's wrappers."""
    while error.cause is not None and (error.cls_name or "").startswith("Dagster"):
        error = error.cause
    return error
