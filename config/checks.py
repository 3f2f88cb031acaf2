"""Checks that span sections of the config (run once every section is valid on its own)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from config.base import Loc, did_you_mean, unknown

if TYPE_CHECKING:
    from config.models import Config

_TOLERANCE = 1e-9


def cross_check(config: Config) -> list[tuple[Loc, str]]:
    """Every cross-section problem, located relative to the config root."""
    return [
        *_duplicate_clusters(config),
        *_hardware(config),
        *_mapping_clusters(config),
        *_quotas(config),
        *_mail(config),
        *_delivery(config),
        *_notices(config),
    ]


def _duplicate_clusters(config: Config) -> list[tuple[Loc, str]]:
    first: dict[str, int] = {}
    problems: list[tuple[Loc, str]] = []
    for index, cluster in enumerate(config.clusters):
        if cluster.name in first:
            problems.append(
                (
                    ("clusters", index, "name"),
                    (f"duplicate cluster name {cluster.name!r} (also clusters[{first[cluster.name]}])"),
                )
            )
        first.setdefault(cluster.name, index)
    return problems


def _hardware(config: Config) -> list[tuple[Loc, str]]:
    """Every node group's gpu_model has a rate; a MIG layout weighs at most one GPU."""
    problems: list[tuple[Loc, str]] = []
    for c_index, cluster in enumerate(config.clusters):
        for g_index, group in enumerate(cluster.inventory.node_groups):
            loc: Loc = ("clusters", c_index, "inventory", "node_groups", g_index)
            if group.gpu_model not in config.rates.gpu_hour:
                models = sorted(config.rates.gpu_hour)
                problems.append(
                    (
                        (*loc, "gpu_model"),
                        (
                            f"no rate for gpu_model {group.gpu_model!r} in rates.gpu_hour"
                            f"{did_you_mean(group.gpu_model, models)} (rates for: {', '.join(models) or 'none'})"
                        ),
                    )
                )
            weight = sum(config.rates.mig_weight(p) for p in group.mig_layout)
            if weight > 1.0 + _TOLERANCE:
                problems.append(
                    (
                        (*loc, "mig_layout"),
                        (
                            f"instances weigh {weight:.3f} GPUs in total with rates.mig_profile_weights; "
                            "a GPU can count for at most 1.0"
                        ),
                    )
                )
    return problems


def _mapping_clusters(config: Config) -> list[tuple[Loc, str]]:
    names = config.cluster_names
    problems: list[tuple[Loc, str]] = []
    for section in ("accounts", "namespaces"):
        for m_index, mapping in enumerate(getattr(config.org, section)):
            for c_index, name in enumerate(mapping.clusters or []):
                if name not in names:
                    problems.append((("org", section, m_index, "clusters", c_index), unknown("cluster", name, names)))
    return problems


def _quotas(config: Config) -> list[tuple[Loc, str]]:
    problems: list[tuple[Loc, str]] = []
    departments = config.org.departments
    for dept in config.quotas.departments:
        if dept not in departments:
            problems.append((("quotas", "departments", dept), unknown("department", dept, departments)))
    total = sum(config.quotas.departments.values())
    capacity = sum(config.capacity_gpus(name) for name in config.cluster_names)
    allowed = config.quotas.overcommit_ratio * capacity
    if total > allowed + _TOLERANCE:
        problems.append(
            (
                ("quotas", "departments"),
                (
                    f"quotas sum to {total} GPUs, more than overcommit_ratio {config.quotas.overcommit_ratio:g} "
                    f"x capacity {capacity:g} GPUs = {allowed:g}"
                ),
            )
        )
    return problems


def _mail(config: Config) -> list[tuple[Loc, str]]:
    """E-mail alerts need a relay to send through."""
    if config.alerts is not None and config.alerts.recipients and config.smtp is None:
        return [(("smtp",), "required section is missing: [alerts] recipients need [smtp] (host, from_address)")]
    return []


def _delivery(config: Config) -> list[tuple[Loc, str]]:
    """Delivered mail needs a relay; a department's managers belong to a configured department."""
    if config.delivery is None:
        return []
    problems: list[tuple[Loc, str]] = []
    if config.smtp is None:
        problems.append(
            (("smtp",), "required section is missing: [delivery] sends through [smtp] (host, from_address)")
        )
    departments = config.org.departments
    for dept in config.delivery.departments:
        if dept not in departments:
            problems.append((("delivery", "departments", dept), unknown("department", dept, departments)))
    return problems


def _notices(config: Config) -> list[tuple[Loc, str]]:
    """Notices that are enabled are sent, through the relay (a dry run needs neither)."""
    if config.notices is not None and config.notices.enabled and config.smtp is None:
        return [
            (
                ("smtp",),
                "required section is missing: [notices] enabled = true sends through [smtp] "
                "(host, from_address); add it, or set enabled = false and review with --dry-run",
            )
        ]
    return []
