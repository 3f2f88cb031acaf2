"""Organisation: Slurm account / Kubernetes namespace -> department -> division."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated

from pydantic import Field, model_validator

from config.base import Loc, Slug, StrictModel, Text, raise_problems, unknown

# Department id that usage no mapping covers is attributed to downstream.
UNMAPPED = "unmapped"


class Division(StrictModel):
    name: Text


class Department(StrictModel):
    name: Text
    division: str  # a key of [org.divisions]


class AccountMapping(StrictModel):
    """A Slurm account's department; ``clusters`` limits it to some clusters (None: all)."""

    account: Text
    department: str
    clusters: Annotated[list[str], Field(min_length=1)] | None = None

    def applies_to(self, cluster: str) -> bool:
        return self.clusters is None or cluster in self.clusters


class NamespaceMapping(StrictModel):
    """A Kubernetes namespace's department; ``clusters`` as for accounts."""

    namespace: Text
    department: str
    clusters: Annotated[list[str], Field(min_length=1)] | None = None

    def applies_to(self, cluster: str) -> bool:
        return self.clusters is None or cluster in self.clusters


def _overlapping(
    mappings: Sequence[AccountMapping | NamespaceMapping], section: str, attr: str
) -> list[tuple[Loc, str]]:
    """A name mapped twice where the cluster scopes intersect is ambiguous."""
    problems: list[tuple[Loc, str]] = []
    seen: dict[str, list[tuple[int, list[str] | None]]] = {}
    for index, mapping in enumerate(mappings):
        name = getattr(mapping, attr)
        for other, scope in seen.get(name, []):
            if scope is None or mapping.clusters is None or set(scope) & set(mapping.clusters):
                problems.append(
                    (
                        (section, index, attr),
                        (
                            f"{attr} {name!r} is already mapped by org.{section}[{other}] on an overlapping "
                            "set of clusters; give each mapping its own `clusters`"
                        ),
                    )
                )
                break
        seen.setdefault(name, []).append((index, mapping.clusters))
    return problems


class OrgConfig(StrictModel):
    """Who owns what. May be empty: unmapped usage is reported as department 'unmapped'."""

    divisions: dict[Slug, Division] = Field(default_factory=dict)
    departments: dict[Slug, Department] = Field(default_factory=dict)
    accounts: list[AccountMapping] = Field(default_factory=list)
    namespaces: list[NamespaceMapping] = Field(default_factory=list)

    @model_validator(mode="after")
    def _references(self) -> OrgConfig:
        problems: list[tuple[Loc, str]] = []
        if UNMAPPED in self.departments:
            problems.append((("departments", UNMAPPED), f"{UNMAPPED!r} is reserved for usage no mapping covers"))
        for dept_id, dept in self.departments.items():
            if dept.division not in self.divisions:
                reason = unknown("division", dept.division, self.divisions)
                problems.append((("departments", dept_id, "division"), reason))
        for section, mappings in (("accounts", self.accounts), ("namespaces", self.namespaces)):
            for index, mapping in enumerate(mappings):
                if mapping.department not in self.departments:
                    reason = unknown("department", mapping.department, self.departments)
                    problems.append(((section, index, "department"), reason))
        problems += _overlapping(self.accounts, "accounts", "account")
        problems += _overlapping(self.namespaces, "namespaces", "namespace")
        raise_problems(problems)
        return self
