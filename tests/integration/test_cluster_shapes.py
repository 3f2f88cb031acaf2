"""Clusters of every shape in one warehouse, from one real Prometheus, through ``cardhours run``.

The simulator's mixed site (8 Slurm GPUs on gpu-001, a Kubernetes pool on kgpu-*/kmig-*) runs
two days, 2026-02-20 and 21, back-filled into a real Prometheus. One config splits it into
three clusters by the DCGM ``Hostname`` label: ``slurm`` (Slurm only), ``k8s`` (Kubernetes
only) and ``plain`` (metrics only: gpu-001's samples again, no scheduler). February's other
days have no series: the first 19 are gaps before the first sample, the last 7 gaps without
series. The month builds, each cluster from exactly its sources, and shows its gaps; a source
that does not answer still fails the day, naming the cluster and the source.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from datetime import date
from pathlib import Path

import polars as pl
import pytest

from simulate.run import simulate
from tests.support.warehouse_read import read

pytestmark = [pytest.mark.integration, pytest.mark.slow]

MONTH, STEP = "2026-02", 300
CARDHOURS = str(Path(sys.executable).with_name("cardhours"))
BEFORE = "2026-02-01..2026-02-19 (19 days) no series, before the first ever landed"
AFTER = "2026-02-22..2026-02-28 (7 days) no series"


def _cluster(name: str, url: str, selector: str, sections: str, inventory: str) -> str:
    return (
        f'[[clusters]]\nname = "{name}"\n\n[clusters.metrics]\nsource = "prometheus"\nstep_seconds = {STEP}\n\n'
        f'[clusters.prometheus]\nurl = "{url}"\nscrape_interval_seconds = {STEP}\nstep_seconds = {STEP}\n'
        f"max_retries = 0\ntimeout_seconds = 5\nselector = '{selector}'\n\n{sections}{inventory}"
    )


def shapes_config(simulated: Path, url: str, folder: Path) -> Path:
    """The simulator's config as three clusters of one Prometheus (Slurm, Kubernetes, metrics only)."""
    text = simulated.read_text()
    groups = re.findall(r"\[\[clusters\.inventory\.node_groups\]\]\n(?:[^\[\n][^\n]*\n)*", text)
    slurm_nodes = "".join(g for g in groups if 'hosts = "gpu-' in g)
    kube_nodes = "".join(g for g in groups if 'hosts = "k' in g)
    head, rest = text[: text.index("[[clusters]]")], text[text.index("[org.divisions") :]
    kube = rest[rest.index("[clusters.kubernetes]") : rest.index("[[org.namespaces]]")]
    rest = rest.replace(kube, "")
    sacct = f'[clusters.slurm]\nsacct_file = "{simulated.with_name("sacct.txt")}"\n\n'
    body = head.replace('path = "cardhours.duckdb"', f'path = "{folder}/cardhours.duckdb"')
    body = body.replace('dir = "reports"', f'dir = "{folder}/reports"')
    body += _cluster("slurm", url, '{Hostname="gpu-001"}', sacct, slurm_nodes)
    body += _cluster("k8s", url, '{Hostname=~"k.+"}', kube.replace('path = "kube_state.om"\n', ""), kube_nodes)
    body += _cluster("plain", url, '{Hostname="gpu-001"}', "", slurm_nodes) + rest
    folder.mkdir(parents=True, exist_ok=True)
    config = folder / "shapes.toml"
    config.write_text(body)
    return config


def cardhours(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "COLUMNS": "400"}
    return subprocess.run([CARDHOURS, *args], capture_output=True, text=True, timeout=900, env=env)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory, prometheus_with) -> dict:
    root = tmp_path_factory.mktemp("shapes")
    sim = simulate(
        root / "sim", gpus=8, days=2, start=date(2026, 2, 20), seed=7, step_seconds=STEP, metrics_format="om", kube=True
    )
    url = prometheus_with([sim.om_path, sim.kube_state_path])
    config = shapes_config(sim.config_path, url, root / "site")
    done = cardhours("run", "--config", str(config), "--month", MONTH)
    assert done.returncode == 0, done.stdout + done.stderr
    return {"root": root, "sim": sim, "config": config, "out": done.stdout, "db": config.with_name("cardhours.duckdb")}


def test_each_cluster_lands_exactly_its_sources(site: dict) -> None:
    landings = read(site["db"], "SELECT cluster, source, status, count(*) AS days FROM meta.landings GROUP BY ALL")
    found = {(r["cluster"], r["source"], r["status"]): r["days"] for r in landings.iter_rows(named=True)}
    series = {(c, s, "ok"): 2 for c, s in [("slurm", "dcgm"), ("k8s", "dcgm"), ("k8s", "kube"), ("plain", "dcgm")]}
    series |= {(c, s, "gap"): 26 for c, s, _ in series}
    assert found == series | {("slurm", "sacct", "ok"): 9, ("slurm", "sacct", "gap"): 19}  # open jobs: 22nd-28th
    per_table = read(
        site["db"],
        "SELECT 'sacct' AS t, cluster FROM raw.slurm_sacct UNION SELECT 'kube', cluster FROM raw.kube_series",
    )
    assert sorted(per_table.rows()) == [("kube", "k8s"), ("sacct", "slurm")]


def test_slurm_only_kubernetes_only_and_metrics_only_clusters_build_their_month(site: dict) -> None:
    usage = read(site["db"], "SELECT cluster, scheduler, count(*) AS jobs FROM marts.fct_job_usage GROUP BY ALL")
    assert sorted((r[0], r[1]) for r in usage.rows()) == [("k8s", "kubernetes"), ("slurm", "slurm")]
    assert usage["jobs"].min() > 5
    clusters = read(site["db"], "SELECT * FROM marts.mart_cluster_monthly ORDER BY cluster")
    assert clusters["cluster"].to_list() == ["k8s", "plain", "slurm"]
    k8s, plain, slurm = clusters.iter_rows(named=True)
    assert k8s["allocated_gpu_hours"] > 0 and slurm["allocated_gpu_hours"] > 0 and k8s["utilization"] > 0
    # metrics only: no jobs, its GPUs' utilization, 2 of 28 days sampled
    assert (plain["allocated_gpu_hours"], plain["job_count"]) == (0.0, 0)
    assert 0 < plain["utilization"] < 1 and plain["sample_coverage"] == pytest.approx(2 / 28)
    charged = read(site["db"], "SELECT DISTINCT cluster FROM marts.fct_chargeback_focus ORDER BY cluster")
    assert charged["cluster"].to_list() == ["k8s", "slurm"]  # utilization without chargeback for 'plain'
    queues = read(site["db"], "SELECT DISTINCT cluster FROM marts.mart_kube_queue_monthly")
    assert queues["cluster"].to_list() == ["k8s"]


def test_the_empty_days_are_gaps_in_the_cli_summary_and_the_review(site: dict) -> None:
    lines = [line.strip() for line in site["out"].splitlines() if line.strip().startswith("gap:")]
    assert [" ".join(line.split()) for line in lines] == [
        f"gap: cluster 'k8s' dcgm: {BEFORE}; {AFTER}",
        f"gap: cluster 'k8s' kube: {BEFORE}; {AFTER}",
        f"gap: cluster 'plain' dcgm: {BEFORE}; {AFTER}",
        f"gap: cluster 'slurm' dcgm: {BEFORE}; {AFTER}",
        "gap: cluster 'slurm' sacct: 2026-02-01..2026-02-19 (19 days) no jobs",
    ]  # sacct lists the jobs still open after the 21st on every later day: no gap there
    assert f"month {MONTH}: 28 days ingested + monthly marts" in " ".join(site["out"].split())
    review = (site["config"].parent / "reports" / MONTH / "review.html").read_text()
    quality = review.split('id="data-quality"', 1)[1].split("</section>", 1)[0]
    rows = [re.findall(r"<td[^>]*>(.*?)</td>", row) for row in re.findall(r"<tr[^>]*>(.*?)</tr>", quality, re.S)]
    first = ["2026-02-01", "2026-02-19", "19", "no series, before the first ever landed"]
    assert ["k8s", "kube", *first] in rows and ["plain", "dcgm", *first] in rows
    assert ["slurm", "sacct", "2026-02-01", "2026-02-19", "19", "no jobs"] in rows
    assert ["k8s", "dcgm", "2026-02-22", "2026-02-28", "7", "no series"] in rows
    assert 'id="schedulers"' in review and 'id="kube-queues"' in review


def test_a_source_that_does_not_answer_fails_the_day_naming_it(site: dict) -> None:
    closed = "http://127.0.0.1:9"  # discard port: nothing listens
    broken = re.sub(r'url = "[^"]+"', f'url = "{closed}"', site["config"].read_text(), count=1)  # 'slurm'
    folder = site["root"] / "broken"
    folder.mkdir()
    path = folder / "broken.toml"
    path.write_text(broken.replace(str(site["config"].parent), str(folder)))
    done = cardhours("run", "--config", str(path), "--month", MONTH)
    text = " ".join((done.stdout + done.stderr).split())
    assert done.returncode == 1, text
    assert (
        f"run failed: day {MONTH}-01 failed: step raw__dcgm_samples: cluster 'slurm' dcgm (GPU samples "
        f"([clusters.metrics])) failed for {MONTH}-01:" in text
    )
    assert "127.0.0.1:9" in text
    landing = read(
        folder / "cardhours.duckdb", "SELECT cluster, source, status FROM meta.landings WHERE status <> 'gap'"
    )
    assert ("slurm", "dcgm", "failed") in landing.rows()
    assert pl.Series(landing["status"]).is_in(["failed", "ok"]).all()
