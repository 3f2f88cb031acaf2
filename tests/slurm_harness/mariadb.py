"""A throwaway MariaDB for slurmdbd: a fresh datadir, a unix socket and a 127.0.0.1 port.

``mariadb-install-db`` creates the datadir, then ``mariadbd`` runs in the foreground, started
as root and dropping to ``mysql`` (its ``--user``), and the ``slurm`` user is created over the
socket (root logs in by unix_socket auth; the bootstrap's ``--extra-file`` cannot create
users). The mysql user must be able to write the datadir and the directory holding the socket
and pid file, so all of them live in ``<workdir>/mysql`` owned by ``mysql``.
No option file is read (``--no-defaults``), so /etc/mysql does not matter.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tests.slurm_harness.procs import Daemon, HarnessError, binary, chown, free_port, run, wait_until

MYSQL_USER = "mysql"
SLURM_DB_USER = "slurm"
SLURM_DB_PASSWORD = "cardhours-test"
SLURM_DB_NAME = "slurm_acct_db"

# Small and fast, not durable: the database lives for one test session.
SERVER_OPTIONS = [
    "--skip-name-resolve",
    "--skip-log-bin",
    "--innodb-buffer-pool-size=64M",
    "--innodb-log-file-size=16M",
    "--innodb-flush-log-at-trx-commit=0",
    "--innodb-doublewrite=0",
    "--innodb-lock-wait-timeout=900",
]


@dataclass
class MariaDB:
    daemon: Daemon
    socket: Path
    port: int

    def sql(self, statement: str) -> str:
        """Run SQL as the database root over the socket (unix_socket auth as OS root)."""
        client = binary("mariadb", "mysql", package="mariadb-client, a dependency of mariadb-server")
        return run([client, "--no-defaults", f"--socket={self.socket}", "-u", "root", "-N", "-e", statement]).stdout


def _grants() -> str:
    return "".join(
        f"CREATE USER '{SLURM_DB_USER}'@'{host}' IDENTIFIED BY '{SLURM_DB_PASSWORD}';\n"
        f"GRANT ALL ON {SLURM_DB_NAME}.* TO '{SLURM_DB_USER}'@'{host}';\n"
        for host in ("127.0.0.1", "localhost")
    )


def start_mariadb(workdir: Path) -> MariaDB:
    home = workdir / "mysql"
    datadir = home / "data"
    datadir.mkdir(parents=True)
    chown(home, MYSQL_USER, 0o750)
    chown(datadir, MYSQL_USER, 0o750)
    install_log = workdir / "logs" / "mariadb-install-db.log"
    install_log.parent.mkdir(exist_ok=True)
    done = run(
        [
            binary("mariadb-install-db", "mysql_install_db", package="mariadb-server"),
            "--no-defaults",
            f"--datadir={datadir}",
            f"--user={MYSQL_USER}",
            "--auth-root-authentication-method=socket",
            "--skip-test-db",
            *SERVER_OPTIONS,
        ],
        timeout=120,
        check=False,
    )
    install_log.write_text(done.stdout + done.stderr)
    if done.returncode != 0:
        raise HarnessError(f"mariadb-install-db exited with {done.returncode}\n{done.stdout}\n{done.stderr}")
    socket, port, error_log = home / "mysqld.sock", free_port(), home / "mariadbd.err"
    daemon = Daemon(
        "mariadbd",
        [
            binary("mariadbd", "mysqld", package="mariadb-server"),
            "--no-defaults",
            f"--datadir={datadir}",
            f"--socket={socket}",
            f"--port={port}",
            "--bind-address=127.0.0.1",
            f"--pid-file={home / 'mariadbd.pid'}",
            f"--user={MYSQL_USER}",
            f"--log-error={error_log}",
            *SERVER_OPTIONS,
        ],
        logs=[workdir / "logs" / "mariadbd.console", error_log, install_log],
    ).start()
    db = MariaDB(daemon, socket, port)
    wait_until("mariadbd socket", socket.is_socket, timeout=60, daemons=[daemon])
    wait_until("mariadbd answers", lambda: _answers(db), timeout=30, daemons=[daemon])
    db.sql(_grants())
    return db


def _answers(db: MariaDB) -> bool:
    try:
        return db.sql("SELECT 1").strip() == "1"
    except HarnessError:
        return False
