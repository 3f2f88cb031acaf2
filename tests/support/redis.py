"""A throwaway Redis (Debian package ``redis-server``) on 127.0.0.1, the Celery broker of the tests.

``with RedisServer() as redis:`` writes a config file into a fresh temp directory (loopback only,
a password, no persistence: nothing is saved or appended), starts ``redis-server`` on it in the
foreground on a free port, waits until it answers PING, and yields a server whose :attr:`env`
holds the Celery variables pipelines/celery_definitions.py and the workers read (the broker in
database 0, the result backend in database 1). On exit the server gets SIGTERM (SIGKILL after a
grace period) and the temp directory is removed, unless ``CARDHOURS_KEEP_REDIS=1``.

The password is in the config file, not on the command line, so ``ps`` never shows it.
"""

from __future__ import annotations

import os
import shutil

import redis

from tests.slurm_harness.procs import Daemon, binary, free_port, wait_until
from tests.support.scratch_server import ScratchServer

PASSWORD = "cardhours-test"  # a throwaway server on loopback, gone after the test
BROKER_DB, BACKEND_DB = 0, 1


class RedisServer(ScratchServer):
    """One Redis server; use as a context manager."""

    prefix = "cardhours-redis-"

    def __init__(self) -> None:
        self.port: int | None = None
        self.daemon: Daemon | None = None

    def url(self, db: int) -> str:
        return f"redis://:{PASSWORD}@127.0.0.1:{self.port}/{db}"

    @property
    def env(self) -> dict[str, str]:
        """``CELERY_BROKER_URL`` and ``CELERY_RESULT_BACKEND`` for this server."""
        return {"CELERY_BROKER_URL": self.url(BROKER_DB), "CELERY_RESULT_BACKEND": self.url(BACKEND_DB)}

    def client(self, db: int = BROKER_DB) -> redis.Redis:
        return redis.Redis(host="127.0.0.1", port=self.port, password=PASSWORD, db=db, socket_timeout=5)

    def _start(self) -> None:
        assert self.root is not None
        self.port = free_port()
        config = self.root / "redis.conf"
        settings = {
            "bind": "127.0.0.1",
            "port": str(self.port),
            "dir": str(self.root),
            "requirepass": PASSWORD,
            "save": '""',
            "appendonly": "no",
            "daemonize": "no",
            "logfile": '""',  # stdout: the Daemon's log file
        }
        config.write_text("".join(f"{key} {value}\n" for key, value in settings.items()))
        config.chmod(0o600)
        server = binary("redis-server", package="redis-server")
        self.daemon = Daemon("redis-server", [server, str(config)], logs=[self.root / "redis.log"]).start()
        wait_until("redis-server answers PING", self._answers, timeout=30, daemons=[self.daemon])

    def _answers(self) -> bool:
        try:
            return bool(self.client().ping())
        except redis.RedisError:
            return False

    def __exit__(self, *exc: object) -> None:
        if self.daemon is not None:
            self.daemon.stop()
        if self.root is not None and os.environ.get("CARDHOURS_KEEP_REDIS") != "1":
            shutil.rmtree(self.root, ignore_errors=True)
