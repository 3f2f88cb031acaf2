"""``cardhours demo`` simulates a mixed site (Slurm nodes and a Kubernetes pool in one cluster)
and runs its month end to end: the review shows both schedulers and the Kubernetes queues.
Run with the fewest Slurm GPUs (8) to keep it short; ``make demo`` uses 88."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from simulate.kube.training import CLUSTER_QUEUE, VOLCANO_QUEUE

pytestmark = [pytest.mark.integration, pytest.mark.slow]

CARDHOURS = str(Path(sys.executable).with_name("cardhours"))


def _section(review: str, section_id: str) -> str:
    return review.split(f'id="{section_id}"', 1)[1].split("</section>", 1)[0]


def _rows(html: str) -> list[list[str]]:
    """The text of each table row's cells."""
    rows = re.findall(r"<tr[^>]*>(.*?)</tr>", html, re.S)
    cells = [re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", row, re.S) for row in rows]
    return [[re.sub(r"<[^>]+>", "", cell).strip() for cell in row] for row in cells if row]


def test_the_demo_review_shows_both_schedulers_and_the_queues(tmp_path: Path) -> None:
    out = tmp_path / "demo"
    done = subprocess.run(
        [CARDHOURS, "demo", "--out", str(out), "--gpus", "8"],
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, "COLUMNS": "400"},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "month 2026-10: 31 days ingested + monthly marts" in done.stdout
    review = (out / "reports" / "2026-10" / "review.html").read_text()
    schedulers = {cells[0] for cells in _rows(_section(review, "schedulers"))}
    assert {"slurm", "kubernetes", "all"} <= schedulers, schedulers
    queues = {tuple(cells[:2]) for cells in _rows(_section(review, "kube-queues"))}
    assert {(CLUSTER_QUEUE, "kueue"), (VOLCANO_QUEUE, "volcano")} <= queues, queues
