"""Fixtures around real services started for the integration tests.

``prometheus_with(om_files, extra_args=())`` back-fills the OpenMetrics files into a fresh
TSDB with the real ``promtool``, starts the real ``prometheus`` on 127.0.0.1 (free port,
100-year retention) and returns its URL. Each file set is back-filled once and its blocks
copied for every server (promtool is the slow part); servers are shared for the whole
session per (files, arguments) and stopped at its end.

``postgres_server`` is a throwaway PostgreSQL per test module (tests/support/postgres.py), for
tests that run Dagster on the production instance config: each module's Dagster instance starts
empty (no runs, ticks or backfills of another module's).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack
from pathlib import Path

import pytest

from cardhours.bench.prometheus_server import PrometheusServer, backfill
from tests.support.postgres import PostgresServer

PrometheusWith = Callable[..., str]


@pytest.fixture(scope="session")
def prometheus_with(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrometheusWith]:
    servers: dict[tuple[tuple[str, ...], tuple[str, ...]], str] = {}
    blocks: dict[tuple[str, ...], Path] = {}

    with ExitStack() as stack:

        def start(om_files: Sequence[Path | str], extra_args: Sequence[str] = ()) -> str:
            files = tuple(str(Path(f).resolve()) for f in om_files)
            if files not in blocks:
                blocks[files] = tmp_path_factory.mktemp("blocks")
                backfill(files, blocks[files])
            key = (files, tuple(extra_args))
            if key not in servers:
                root = tmp_path_factory.mktemp("prometheus")
                shutil.copytree(blocks[files], root / "data")
                server = stack.enter_context(PrometheusServer(root / "data", root, extra_args=extra_args))
                servers[key] = server.url
            return servers[key]

        yield start


@pytest.fixture(scope="module")
def postgres_server() -> Iterator[PostgresServer]:
    with PostgresServer() as server:
        yield server
