"""A real VictoriaMetrics (Debian package ``victoria-metrics``) on 127.0.0.1, loaded with
history from OpenMetrics files: cardhours reads "anything speaking the Prometheus HTTP API",
and VictoriaMetrics is the one of those Debian ships.

``VictoriaServer(workdir, extra_args)`` starts ``victoria-metrics`` on a free port with its
own storage directory and a 100-year retention, waits for ``/health``; :meth:`load` imports
OpenMetrics files through ``/api/v1/import/prometheus`` (the Prometheus text format, whose
timestamps are milliseconds: OpenMetrics' seconds are converted) and flushes, so the
samples are searchable at once. Facts of 1.79 (Debian 12): ``/api/v1/status/buildinfo``
answers with no version; range selectors are left-open, ``(t - r, t]``; ``query_range``
moves start and end to multiples of the step unless given ``nocache=1``; its
``-search.maxSamplesPerQuery`` seems to count whole storage blocks (a 10-second request for
one MIG host was refused at 100,000).
"""

from __future__ import annotations

import shutil
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterable, Sequence
from pathlib import Path

from cardhours.bench.prometheus_server import free_port

PACKAGE_HINT = "install the Debian package `victoria-metrics` (scripts/install-system-deps.sh)"
BATCH_LINES = 200_000


class VictoriaError(RuntimeError):
    """The server could not be started or loaded."""


class VictoriaServer:
    def __init__(self, workdir: Path, extra_args: Sequence[str] = (), ready_timeout: float = 60.0) -> None:
        self.workdir, self.extra_args, self.ready_timeout = Path(workdir), list(extra_args), ready_timeout
        self.port: int | None = None
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> VictoriaServer:
        binary = shutil.which("victoria-metrics")
        if binary is None:
            raise VictoriaError(f"victoria-metrics is not installed: {PACKAGE_HINT}")
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        log = (self.workdir / "victoria.log").open("wb")
        self._process = subprocess.Popen(
            [
                binary,
                f"-storageDataPath={self.workdir / 'data'}",
                f"-httpListenAddr=127.0.0.1:{self.port}",
                "-retentionPeriod=100y",
                *self.extra_args,
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + self.ready_timeout
        while time.monotonic() < deadline and self._process.poll() is None:
            try:
                with urllib.request.urlopen(f"{self.url}/health", timeout=2):
                    return self
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                time.sleep(0.1)
        self.__exit__(None, None, None)
        raise VictoriaError(
            f"victoria-metrics did not become ready on {self.url}: "
            f"{(self.workdir / 'victoria.log').read_text(errors='replace')[-3000:]}"
        )

    def __exit__(self, *exc: object) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(15)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait(15)

    def load(self, om_files: Iterable[Path | str]) -> int:
        """Import every sample of ``om_files``; the number of samples sent."""
        sent, batch = 0, []
        for om in om_files:
            with open(om) as lines:
                for line in lines:
                    if line.startswith("#") or not line.strip():
                        continue
                    head, seconds = line.rstrip("\n").rsplit(" ", 1)
                    batch.append(f"{head} {round(float(seconds) * 1000)}\n")
                    if len(batch) >= BATCH_LINES:
                        sent += self._post(batch)
                        batch = []
        sent += self._post(batch)
        urllib.request.urlopen(f"{self.url}/internal/force_flush", timeout=60).read()
        return sent

    def _post(self, lines: list[str]) -> int:
        if lines:
            request = urllib.request.Request(
                f"{self.url}/api/v1/import/prometheus", data="".join(lines).encode(), method="POST"
            )
            with urllib.request.urlopen(request, timeout=300) as answer:
                if answer.status not in (200, 204):
                    raise VictoriaError(f"import answered HTTP {answer.status}")
        return len(lines)
