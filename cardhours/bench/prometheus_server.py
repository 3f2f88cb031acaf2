"""A real Prometheus on 127.0.0.1 over back-filled history: for integration tests and benchmarks.

``backfill`` turns OpenMetrics files into TSDB blocks with ``promtool tsdb
create-blocks-from openmetrics``; ``PrometheusServer`` serves a data directory from a free
port until the ``with`` block ends.

Facts of this setup (Debian's Prometheus 2.42): promtool reads OpenMetrics timestamps in
seconds (milliseconds are silently taken for seconds and land in the year 58,000),
silently drops out-of-order and duplicate samples (write each series sorted and
deduplicated), and cuts blocks at 2-hour boundaries. Retention counts back from the newest
block, so the server runs with ``--storage.tsdb.retention.time=100y`` or old blocks vanish.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Collection, Iterable, Sequence
from pathlib import Path
from types import TracebackType

PACKAGE_HINT = "install the Debian package `prometheus` (apt-get install -y prometheus; scripts/install-system-deps.sh)"
CONFIG = "global:\n  scrape_interval: 15s\nscrape_configs: []\n"  # nothing to scrape: history only
LOG_TAIL = 4000


class PrometheusHarnessError(RuntimeError):
    """The server or promtool could not be run."""


def binary(name: str) -> str:
    """Path of ``prometheus`` or ``promtool``; a clear error when the package is missing."""
    found = shutil.which(name) or next(
        (p for p in (f"/usr/bin/{name}", f"/usr/local/bin/{name}") if Path(p).exists()), None
    )
    if found is None:
        raise PrometheusHarnessError(f"{name} is not installed: {PACKAGE_HINT}")
    return found


def backfill(om_files: Iterable[Path | str], data_dir: Path | str, timeout: float = 3600.0) -> list[Path]:
    """Create TSDB blocks in ``data_dir`` from each OpenMetrics file; returns the block directories."""
    promtool, data_dir = binary("promtool"), Path(data_dir)
    data_dir.mkdir(parents=True, exist_ok=True)
    before = {p.parent for p in data_dir.glob("*/meta.json")}
    for om in om_files:
        done = subprocess.run(
            [promtool, "tsdb", "create-blocks-from", "openmetrics", str(om), str(data_dir)],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if done.returncode != 0:
            raise PrometheusHarnessError(
                f"promtool tsdb create-blocks-from openmetrics {om} {data_dir} failed "
                f"(exit {done.returncode}):\n{done.stderr.strip() or done.stdout.strip()}"
            )
    return sorted({p.parent for p in data_dir.glob("*/meta.json")} - before)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class PrometheusServer:
    """``with PrometheusServer(data_dir, workdir) as server: server.url``."""

    def __init__(
        self,
        data_dir: Path | str,
        workdir: Path | str,
        *,
        extra_args: Sequence[str] = (),
        ready_timeout: float = 120.0,
        stop_timeout: float = 15.0,
        cpus: Collection[int] | None = None,
    ) -> None:
        self.data_dir, self.workdir = Path(data_dir), Path(workdir)
        self.extra_args = list(extra_args)
        self.cpus = None if cpus is None else frozenset(cpus)  # the server's CPUs (Linux affinity); None: any
        self.ready_timeout, self.stop_timeout = ready_timeout, stop_timeout
        self.port: int | None = None
        self.log_path = self.workdir / "prometheus.log"
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        if self.port is None:
            raise PrometheusHarnessError("the server is not running")
        return f"http://127.0.0.1:{self.port}"

    def command(self, port: int) -> list[str]:
        config = self.workdir / "prometheus.yml"
        config.write_text(CONFIG)
        # Back-filled history is years old: keep it, unless the caller sets a retention itself
        # (Prometheus refuses a flag given twice).
        own = any(arg.startswith("--storage.tsdb.retention") for arg in self.extra_args)
        return [
            binary("prometheus"),
            f"--config.file={config}",
            f"--storage.tsdb.path={self.data_dir}",
            *([] if own else ["--storage.tsdb.retention.time=100y"]),
            f"--web.listen-address=127.0.0.1:{port}",
            *self.extra_args,
        ]

    def start(self) -> PrometheusServer:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        for _ in range(3):  # a free port can be taken between probing and binding
            self.port = free_port()
            with self.log_path.open("wb") as log:
                self._process = subprocess.Popen(
                    self.command(self.port),
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    preexec_fn=None if self.cpus is None else self._pin,
                )
            if self._wait_ready():
                return self
            if "address already in use" not in self.log():
                break
        self.stop()
        raise PrometheusHarnessError(
            f"prometheus did not become ready on {self.url} within "
            f"{self.ready_timeout:.0f} s; its log ends:\n{self.log()[-LOG_TAIL:]}"
        )

    def _pin(self) -> None:
        """In the child before exec: run on ``cpus`` only (every thread the server starts inherits it)."""
        os.sched_setaffinity(0, self.cpus)

    def _wait_ready(self) -> bool:
        deadline = time.monotonic() + self.ready_timeout
        while time.monotonic() < deadline:
            if self._process is None or self._process.poll() is not None:
                return False
            try:
                with urllib.request.urlopen(f"{self.url}/-/ready", timeout=2) as answer:
                    if answer.status == 200:
                        return True
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            time.sleep(0.1)
        return False

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def stop(self) -> None:
        """Terminate; kill after ``stop_timeout``."""
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(self.stop_timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(self.stop_timeout)

    def __enter__(self) -> PrometheusServer:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.stop()
