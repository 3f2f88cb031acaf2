"""What a person is told when a step fails: the asset's own error, out of Dagster's wrappers.

A failed step's error is Dagster's wrapper (``DagsterExecutionStepExecutionError``,
``DagsterResourceFunctionError``) whose cause is the exception the asset or resource raised.
That exception's own causes (the library error it translated, such as polars' message about a
broken file) stay behind it: the asset's text names the file, the cluster and what to do.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dagster._utils.error import SerializableErrorInfo  # the type of a failure event's error


# The exception class Dagster puts before a message: Dagster's own (a dagster.Failure's text is the
# message) and the pipelines' (pipelines.landing.SourceFailed names the cluster and source itself);
# other exceptions keep their class name without its module path.
_CLASS_PREFIX = re.compile(r"^(?:(?:dagster|pipelines)\.\S+: |(?:[a-z_]+\.)+(?=[A-Z]\w*: ))")


def error_text(error: SerializableErrorInfo) -> str:
    """What a person reads of a failed step: the asset's own error, without the class prefixes."""
    return _CLASS_PREFIX.sub("", asset_error(error).message.strip())


def asset_error(error: SerializableErrorInfo) -> SerializableErrorInfo:
    """The error the asset (or resource) raised, inside Dagster's wrappers."""
    while error.cause is not None and (error.cls_name or "").startswith("Dagster"):
        error = error.cause
    return error
