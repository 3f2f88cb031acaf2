"""``dagster-daemon`` and ``dagster-webserver`` run as a service would run them, for the tests.

``DagsterService(home, env)`` copies deploy/dagster.yaml into ``home`` (the DAGSTER_HOME), writes
deploy/workspace.yaml there with ``module`` as its code location (still named ``cardhours``),
and starts both processes from the venv that runs the tests: the webserver on a free loopback
port, the daemon beside it. ``env`` (added to this process's environment) must hold the
``DAGSTER_PG_*`` variables and ``CARDHOURS_CONFIG``. On exit both get SIGTERM, then their
process groups are killed, so the code servers and run workers they spawned go with them.
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
import time
from pathlib import Path

import yaml

from tests.slurm_harness.procs import Daemon, HarnessError, free_port, wait_until
from tests.support.dagster_web import graphql

REPO = Path(__file__).resolve().parents[2]
PRODUCTION_INSTANCE = REPO / "deploy" / "dagster.yaml"
PRODUCTION_WORKSPACE = REPO / "deploy" / "workspace.yaml"
LOCATION = "cardhours"  # the location_name in deploy/workspace.yaml
REPOSITORY = "__repository__"  # the repository Dagster makes of a module's Definitions
LOAD_SECONDS = 300  # the import alone took over 180 s on a machine busy with other work
REPOSITORY_SELECTOR = {"repositoryLocationName": LOCATION, "repositoryName": REPOSITORY}
TERMINAL = {"SUCCESS", "FAILURE", "CANCELED"}  # run statuses
BACKFILL_ACTIVE = {"REQUESTED", "CANCELING", "FAILING"}

LAUNCH_BACKFILL = """
mutation($params: LaunchBackfillParams!) {
  launchPartitionBackfill(backfillParams: $params) {
    __typename
    ... on LaunchBackfillSuccess { backfillId }
    ... on Error { message }
  }
}"""
RUNS = """
query($tags: [ExecutionTag!]) {
  runsOrError(filter: {tags: $tags}) {
    ... on Runs { results { runId status tags { key value } } }
  }
}"""
BACKFILL_STATUS = """
query($id: String!) { partitionBackfillOrError(backfillId: $id) { ... on PartitionBackfill { status } } }"""


def workspace_yaml(module: str) -> str:
    """deploy/workspace.yaml with ``module`` as the code location, loaded from this checkout."""
    workspace = yaml.safe_load(PRODUCTION_WORKSPACE.read_text())
    (entry,) = workspace["load_from"]
    entry["python_module"].update(module_name=module, working_directory=str(REPO))
    return yaml.safe_dump(workspace)


class DagsterService:
    def __init__(self, home: Path, env: dict[str, str], module: str = "pipelines.definitions") -> None:
        self.home, self.module = Path(home), module
        self.env = {**os.environ, **env, "DAGSTER_HOME": str(self.home), "PYTHONPATH": str(REPO)}
        self.port = free_port()
        self.daemons: list[Daemon] = []

    def __enter__(self) -> DagsterService:
        self.home.mkdir(parents=True, exist_ok=True)
        shutil.copy(PRODUCTION_INSTANCE, self.home / "dagster.yaml")
        workspace = self.home / "workspace.yaml"
        workspace.write_text(workspace_yaml(self.module))
        bin_dir = Path(sys.executable).parent
        logs = self.home / "service-logs"  # not DAGSTER_HOME/logs: Dagster's telemetry upload empties that
        try:
            self.daemons = [
                Daemon(
                    "dagster-webserver",
                    [str(bin_dir / "dagster-webserver"), "-h", "127.0.0.1", "-p", str(self.port), "-w", str(workspace)],
                    logs=[logs / "webserver.log"],
                    env=self.env,
                ).start(),
                Daemon(
                    "dagster-daemon",
                    [str(bin_dir / "dagster-daemon"), "run", "-w", str(workspace)],
                    logs=[logs / "daemon.log"],
                    env=self.env,
                ).start(),
            ]
            wait_until(
                "the code location loads in the webserver", self._location_loaded, LOAD_SECONDS, self.daemons, 1.0
            )
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _location_loaded(self) -> bool:
        try:
            answer = graphql(self.port, "{ repositoriesOrError { ... on RepositoryConnection { nodes { name } } } }")
        except OSError:
            return False
        nodes = ((answer.get("data") or {}).get("repositoriesOrError") or {}).get("nodes") or []
        return any(node["name"] == REPOSITORY for node in nodes)

    def query(self, query: str, variables: dict | None = None) -> dict:
        """GraphQL against the webserver; a GraphQL error is an AssertionError with the logs."""
        answer = graphql(self.port, query, variables)
        if answer.get("errors"):
            raise AssertionError(f"GraphQL errors: {answer['errors']}\n{self.report()}")
        return answer["data"]

    def launch_backfill(self, job: str, partitions: list[str]) -> str:
        """Backfill ``partitions`` of ``job`` (as the UI's "Launch backfill" does); the backfill's id."""
        params = {
            "selector": {"partitionSetName": f"{job}_partition_set", "repositorySelector": REPOSITORY_SELECTOR},
            "partitionNames": partitions,
        }
        launched = self.query(LAUNCH_BACKFILL, {"params": params})["launchPartitionBackfill"]
        assert launched["__typename"] == "LaunchBackfillSuccess", launched
        return launched["backfillId"]

    def runs(self, key: str, value: str) -> list[dict]:
        """The runs tagged ``key=value`` (runId, status, tags)."""
        return self.query(RUNS, {"tags": [{"key": key, "value": value}]})["runsOrError"]["results"]

    def backfill_status(self, backfill_id: str) -> str:
        return self.query(BACKFILL_STATUS, {"id": backfill_id})["partitionBackfillOrError"]["status"]

    def backfill_done(self, backfill_id: str, runs: int) -> bool:
        """Whether the backfill launched its ``runs`` runs, all ended, and the daemon closed it."""
        launched = self.runs("dagster/backfill", backfill_id)
        if len(launched) != runs or any(run["status"] not in TERMINAL for run in launched):
            return False
        return self.backfill_status(backfill_id) not in BACKFILL_ACTIVE  # closed on the daemon's next pass

    def report(self) -> str:
        return "\n\n".join(d.report() for d in self.daemons)

    def wait(self, what: str, ready, timeout: float) -> float:
        """Poll ``ready`` until true, failing with both logs if a process dies or time runs out."""
        try:
            return wait_until(what, ready, timeout, self.daemons, interval=2.0)
        except HarnessError as error:
            raise AssertionError(str(error)) from None

    def __exit__(self, *exc: object) -> None:
        for daemon in reversed(self.daemons):
            daemon.stop(timeout=30)
        time.sleep(0.5)
        for daemon in self.daemons:
            if daemon.proc is not None:
                try:
                    os.killpg(daemon.proc.pid, signal.SIGKILL)  # its own session: start_new_session
                except ProcessLookupError:
                    pass


def partition_of(run: dict) -> str:
    """The partition a run (as ``runs`` returns it) ran."""
    return next(tag["value"] for tag in run["tags"] if tag["key"] == "dagster/partition")
