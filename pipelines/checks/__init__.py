"""Asset checks: Great Expectations suites run as Dagster asset check results."""

from pipelines.checks.gx_adapter import (
    DEFAULT_MAX_FRAME_ROWS,
    FrameTooLargeError,
    run_suite_on_duckdb,
    run_suite_on_frame,
)
from pipelines.checks.suites import raw_dcgm_samples_suite, raw_slurm_sacct_suite, suite_from_schema

__all__ = [
    "DEFAULT_MAX_FRAME_ROWS",
    "FrameTooLargeError",
    "raw_dcgm_samples_suite",
    "raw_slurm_sacct_suite",
    "run_suite_on_duckdb",
    "run_suite_on_frame",
    "suite_from_schema",
]
