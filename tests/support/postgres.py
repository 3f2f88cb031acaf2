"""A throwaway PostgreSQL (Debian package ``postgresql``) on 127.0.0.1, for the Dagster instance
and the marts' publication (``create_database``: a database and its owner for a test).

``with PostgresServer() as pg:`` runs ``initdb`` into a fresh data directory under a temp
directory, starts ``postgres`` in the foreground on a free loopback port, creates the database
``dagster`` and yields a server whose :attr:`env` holds the ``DAGSTER_PG_*`` variables that
deploy/dagster.yaml reads. On exit the server gets a fast shutdown (SIGINT: open sessions are
cut, not waited for) and the temp directory is removed, unless ``CARDHOURS_KEEP_POSTGRES=1``.

PostgreSQL refuses to run as root, so a root process (CI) starts it as the ``postgres`` user the
package creates, and that user owns the temp directory. Connections over TCP need the password
(scram-sha-256), so the test instance reads it from the environment the way production does;
the unix socket lives in the temp directory (never /var/run/postgresql). Debian keeps the
server binaries in /usr/lib/postgresql/<major>/bin, off the PATH; the newest major is used.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from pathlib import Path

import psycopg2
from psycopg2 import sql

from tests.slurm_harness.procs import Daemon, HarnessError, chown, free_port, run, wait_until
from tests.support.scratch_server import ScratchServer

PACKAGE_HINT = "install the Debian package `postgresql` (scripts/install-system-deps.sh does)"
SERVER_USER = "postgres"  # the package's system user; used only when we are root
DB_USER = "cardhours"
DB_PASSWORD = "cardhours-test"  # a throwaway server on loopback, gone after the session
DB_NAME = "dagster"
# Small and fast, not durable: the database lives for one test session.
SERVER_SETTINGS = {
    "listen_addresses": "127.0.0.1",
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
    "max_connections": "100",
    "shared_buffers": "32MB",
}


def server_binary(name: str) -> str:
    """``name`` from the newest /usr/lib/postgresql/<major>/bin, else from the PATH."""
    majors = sorted(Path("/usr/lib/postgresql").glob("*/bin"), key=lambda p: int(p.parent.name), reverse=True)
    for directory in majors:
        if (directory / name).is_file():
            return str(directory / name)
    found = shutil.which(name)
    if found is None:
        raise HarnessError(f"PostgreSQL's {name} is not installed: {PACKAGE_HINT}")
    return found


class PostgresServer(ScratchServer):
    """One PostgreSQL server with the ``dagster`` database; use as a context manager."""

    prefix = "cardhours-postgres-"

    def __init__(self) -> None:
        self.port: int | None = None
        self.daemon: Daemon | None = None
        self.user = SERVER_USER if os.geteuid() == 0 else None

    @property
    def env(self) -> dict[str, str]:
        """The ``DAGSTER_PG_*`` variables deploy/dagster.yaml reads."""
        return {
            "DAGSTER_PG_HOST": "127.0.0.1",
            "DAGSTER_PG_PORT": str(self.port),
            "DAGSTER_PG_USERNAME": DB_USER,
            "DAGSTER_PG_PASSWORD": DB_PASSWORD,
            "DAGSTER_PG_DB": DB_NAME,
        }

    def connect(self, dbname: str = DB_NAME):
        """A psycopg2 connection over TCP with the password (autocommit)."""
        conn = psycopg2.connect(
            host="127.0.0.1", port=self.port, user=DB_USER, password=DB_PASSWORD, dbname=dbname, connect_timeout=5
        )
        conn.autocommit = True
        return conn

    def query(self, text: str, params: tuple = (), dbname: str = DB_NAME) -> list[tuple]:
        conn = self.connect(dbname)
        try:
            with conn.cursor() as cursor:
                cursor.execute(text, params)
                return cursor.fetchall()
        finally:
            conn.close()

    def create_database(self, name: str, owner: str, password: str) -> None:
        """Database ``name`` owned by a new login role ``owner`` (not a superuser) with ``password``:
        what a site gives an application that creates its own tables."""
        conn = self.connect("postgres")
        try:
            with conn.cursor() as cursor:
                cursor.execute(sql.SQL("CREATE ROLE {} LOGIN PASSWORD %s").format(sql.Identifier(owner)), (password,))
                database = sql.SQL("CREATE DATABASE {} OWNER {}")
                cursor.execute(database.format(sql.Identifier(name), sql.Identifier(owner)))
        finally:
            conn.close()

    def _start(self) -> None:
        assert self.root is not None
        os.chmod(self.root, 0o755)  # the server user must reach its directories below it
        data, sockets, logs = self.root / "data", self.root / "run", self.root / "logs"
        for directory in (data, sockets, logs):
            directory.mkdir()
            if self.user:
                chown(directory, self.user, 0o700)
        password_file = self.root / "password"
        password_file.write_text(DB_PASSWORD + "\n")
        if self.user:
            chown(password_file, self.user, 0o600)
        run(
            [
                server_binary("initdb"),
                f"--pgdata={data}",
                f"--username={DB_USER}",
                f"--pwfile={password_file}",
                "--auth-local=trust",
                "--auth-host=scram-sha-256",
                "--encoding=UTF8",
                "--locale=C",
                "--no-sync",
            ],
            timeout=120,
            user=self.user,
        )
        password_file.unlink()
        self.port = free_port()
        settings = {**SERVER_SETTINGS, "port": str(self.port), "unix_socket_directories": str(sockets)}
        argv = [server_binary("postgres"), "-D", str(data)]
        for key, value in settings.items():
            argv += ["-c", f"{key}={value}"]
        self.daemon = Daemon("postgres", argv, logs=[logs / "postgres.log"], user=self.user).start()
        wait_until("postgres accepts connections", self._answers, timeout=60, daemons=[self.daemon])
        conn = self.connect("postgres")
        try:
            with conn.cursor() as cursor:
                cursor.execute(f"CREATE DATABASE {DB_NAME}")  # a fixed identifier, not a value
        finally:
            conn.close()

    def _answers(self) -> bool:
        try:
            self.connect("postgres").close()
        except psycopg2.OperationalError:
            return False
        return True

    def __exit__(self, *exc: object) -> None:
        if self.daemon is not None and self.daemon.alive():
            assert self.daemon.proc is not None
            self.daemon.proc.send_signal(signal.SIGINT)  # fast shutdown: does not wait for clients
            try:
                self.daemon.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.daemon.stop()
        if self.root is not None and os.environ.get("CARDHOURS_KEEP_POSTGRES") != "1":
            shutil.rmtree(self.root, ignore_errors=True)
