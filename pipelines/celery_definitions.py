"""The cardhours code location with the daily ingest's steps on Celery workers (docs/scaling.md).

Load it instead of ``pipelines.definitions`` (workspace.yaml ``module_name:
pipelines.celery_definitions``; needs ``cardhours[celery]``). It has the same assets, resources and
monthly job; only the daily job differs: ``daily_ingest_celery`` runs on ``celery_executor``, so
the run's process only orders the steps and each step (a cluster-day landing, a rollup) is
executed by whichever Celery worker takes it from the broker's ``dagster`` queue, on this host or
another. That is safe because the daily steps write only the lake (one Parquet file per table,
cluster and day, renamed into place: pipelines/store.py) and never open the DuckDB file; every
worker must see the same lake path, the same cardhours config and the same Dagster instance
(PostgreSQL: deploy/dagster.yaml).

The monthly job stays in-process (``in_process_executor``, pipelines/jobs.py): it is the single
writer of the DuckDB file and holds the warehouse lock from its first step to its last, which a
step on another host could neither share nor take.

Where the broker and the result backend are is read from the environment of the process that
runs the step loop, when a run starts (Dagster's ``{"env": ...}`` config source: never at import,
and never written here): ``CELERY_BROKER_URL`` and ``CELERY_RESULT_BACKEND``, the variables the
Celery workers read too, so a worker started as ``celery -A dagster_celery.app worker`` with the
same environment file listens where the runs send (a Redis URL such as
``redis://:PASSWORD@HOST:6379/0``; the password only ever in the environment).
"""

from __future__ import annotations

from dagster import Definitions, EnvVar
from dagster_celery import celery_executor

from pipelines.definitions import build_definitions
from pipelines.jobs import DAILY_CELERY_JOB, daily_job

BROKER_ENV = "CELERY_BROKER_URL"
BACKEND_ENV = "CELERY_RESULT_BACKEND"
CELERY_QUEUE = "dagster"  # dagster_celery's queue: what the workers listen on (-Q)

# The executor's config: the broker and backend named by environment variable, resolved at run start.
CELERY_EXECUTOR_CONFIG = {"broker": {"env": BROKER_ENV}, "backend": {"env": BACKEND_ENV}}

daily_ingest_celery_job = daily_job(DAILY_CELERY_JOB, celery_executor.configured(CELERY_EXECUTOR_CONFIG))


def build_celery_definitions(config_path: str | EnvVar) -> Definitions:
    """pipelines/definitions.py's assets and resources, bound to one config file, with
    ``daily_ingest_celery`` as the daily job (and its schedule)."""
    return build_definitions(config_path, daily=daily_ingest_celery_job)


defs = build_celery_definitions(EnvVar("CARDHOURS_CONFIG"))
