"""A cardhours TOML config for a simulated cluster (format: cardhours.example.toml),
written by hand: file metrics, a saved sacct file, the node groups, the org minus the
deliberately unmapped account, rates, the flags at their defaults (config.policy)
and department quotas."""

from __future__ import annotations

import json
from pathlib import Path

from config.policy import FlagsConfig
from simulate.cluster import Cluster, mig_fraction, node_groups
from simulate.jobs import Org

RATES = {"H100": 2.50, "H200": 3.20, "A100": 1.40}


def toml_value(value: object) -> str:
    """A TOML literal: strings as basic strings (JSON escaping is valid TOML), numbers, lists."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    raise TypeError(f"no TOML form for {value!r}")


def _key(key: str) -> str:
    """A bare key when allowed, else a quoted one."""
    return key if key.replace("-", "").replace("_", "").isalnum() and key.isascii() else toml_value(key)


def _pairs(items: dict[str, object]) -> list[str]:
    return [f"{_key(k)} = {toml_value(v)}" for k, v in items.items()]


def _table(header: str, items: dict[str, object]) -> list[str]:
    return [f"[{header}]", *_pairs(items), ""]


def _array_item(header: str, items: dict[str, object]) -> list[str]:
    return [f"[[{header}]]", *_pairs(items), ""]


def capacity_gpus(cluster: Cluster) -> float:
    """GPUs in charged units: MIG GPUs count their layout's slice fractions."""
    return sum(8 * (sum(mig_fraction(p) for p in n.mig_layout) if n.mig_layout else 1.0) for n in cluster.nodes)


def department_quotas(cluster: Cluster, org: Org) -> dict[str, int]:
    """GPUs per department in proportion to its users' activity; they sum to at most capacity."""
    weight: dict[str, float] = {key: 0.0 for key, _, _ in org.departments}
    for user in org.users:
        account = org.account(user.account)
        if account.mapped:
            weight[account.department] += user.weight
    total = sum(weight.values()) or 1.0
    return {key: int(capacity_gpus(cluster) * w / total) for key, w in weight.items()}


def _cluster_lines(
    cluster: Cluster, metrics_path: str, sacct_file: str, step_seconds: int, events_file: str | None
) -> list[str]:
    lines = ["[[clusters]]", f"name = {toml_value(cluster.name)}", ""]
    lines += _table("clusters.metrics", {"source": "file", "path": metrics_path, "step_seconds": step_seconds})
    slurm: dict[str, object] = {"sacct_file": sacct_file}
    if events_file is not None:
        slurm["events_file"] = events_file
    lines += _table("clusters.slurm", slurm)
    for group in node_groups(cluster):
        items: dict[str, object] = {
            "hosts": group.hosts,
            "gpu_model": group.gpu_model,
            "model_name": group.model_name,
            "gpus_per_node": group.gpus_per_node,
            "gpu_memory_mib": group.gpu_memory_mib,
        }
        if group.nvlink_domain is not None:
            items["nvlink_domain"] = group.nvlink_domain
        items["switch_group"] = group.switch_group
        if group.mig_layout:
            items["mig_layout"] = list(group.mig_layout)
        lines += _array_item("clusters.inventory.node_groups", items)
    return lines


def _org_lines(org: Org) -> list[str]:
    lines: list[str] = []
    for key, name in org.divisions.items():
        lines += _table(f"org.divisions.{_key(key)}", {"name": name})
    for key, name, division in org.departments:
        lines += _table(f"org.departments.{_key(key)}", {"name": name, "division": division})
    for account in org.accounts:
        if account.mapped:
            lines += _array_item("org.accounts", {"account": account.name, "department": account.department})
    return lines


def config_text(
    cluster: Cluster,
    org: Org,
    metrics_path: str,
    sacct_file: str = "sacct.txt",
    step_seconds: int = 30,
    events_file: str | None = None,
) -> str:
    """The whole config file as text (``events_file``: the node events file, when one was written)."""
    lines = [
        f"# cardhours config for the simulated cluster {cluster.name!r} (written by cardhours simulate).",
        f"# Account {', '.join(repr(a.name) for a in org.accounts if not a.mapped)} is left unmapped on purpose.",
        "",
        *_table("warehouse", {"path": "cardhours.duckdb"}),
        *_table("reports", {"dir": "reports"}),
        *_cluster_lines(cluster, metrics_path, sacct_file, step_seconds, events_file),
        *_org_lines(org),
        *_table("rates", {"currency": "EUR"}),
        *_table("rates.gpu_hour", dict(RATES)),
        *_table("flags", FlagsConfig().model_dump()),  # every threshold at its default, to adjust
        *_table("quotas", {"overcommit_ratio": 1.0}),
        *_table("quotas.departments", dict(department_quotas(cluster, org))),
    ]
    return "\n".join(lines).rstrip("\n") + "\n"


def write_config(
    path: Path,
    cluster: Cluster,
    org: Org,
    metrics_path: str,
    sacct_file: str = "sacct.txt",
    step_seconds: int = 30,
    events_file: str | None = None,
) -> Path:
    """Write ``cardhours.toml``; paths in it are relative to the file; ``step_seconds`` is the
    sample spacing the metrics files were written at (coverage counts against it)."""
    path = Path(path)
    path.write_text(config_text(cluster, org, metrics_path, sacct_file, step_seconds, events_file), encoding="utf-8")
    return path
