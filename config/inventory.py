"""Hardware inventory: node groups of identical GPU nodes, and MIG profile names."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Annotated

from pydantic import AfterValidator, Field, field_validator, model_validator

from config.base import Loc, PositiveInt, StrictModel, Text, raise_problems
from contracts.hostlist import HostlistError, expand

MIG_SLICES_PER_GPU = 7

_MIG_PROFILE = re.compile(r"^(?P<slices>[1-7])g\.(?P<memory_gb>[1-9][0-9]*)gb(?P<me>\+me)?$")


@dataclass(frozen=True)
class MigProfileSpec:
    """A parsed MIG profile name such as ``3g.40gb`` or ``1g.10gb+me``."""

    name: str
    slices: int  # compute slices out of MIG_SLICES_PER_GPU
    memory_gb: int  # the memory size in the name (marketing GB, approximate)
    media_extensions: bool  # the "+me" variant


def parse_mig_profile(name: str) -> MigProfileSpec:
    """Parse ``<n>g.<mem>gb`` (n 1-7) with an optional ``+me`` suffix; ``ValueError`` otherwise."""
    match = _MIG_PROFILE.match(name)
    if not match:
        raise ValueError(
            f"unknown MIG profile {name!r}: expected '<n>g.<mem>gb' with n 1-7, "
            "optionally followed by '+me' (e.g. '3g.40gb', '1g.10gb+me')"
        )
    return MigProfileSpec(
        name=name,
        slices=int(match["slices"]),
        memory_gb=int(match["memory_gb"]),
        media_extensions=match["me"] is not None,
    )


def _check_mig_profile(name: str) -> str:
    parse_mig_profile(name)
    return name


MigProfile = Annotated[str, AfterValidator(_check_mig_profile)]


class NodeGroup(StrictModel):
    """A set of identical GPU nodes."""

    hosts: str  # Slurm hostlist syntax, e.g. "gpu-[001-012]"
    gpu_model: Text  # rate key in [rates.gpu_hour]
    model_name: Text  # as dcgm-exporter's modelName label prints it
    gpus_per_node: PositiveInt
    gpu_memory_mib: PositiveInt
    # The NVLink domain (GPUs joined by NVLink/NVSwitch) all these hosts share, for a rack-scale
    # domain spanning hosts (GB200 NVL72); unset: each host is its own domain (HGX/DGX nodes).
    nvlink_domain: Text | None = None
    switch_group: Text | None = None  # the leaf switch these hosts are under
    mig_layout: list[MigProfile] = Field(default_factory=list)

    @field_validator("hosts")
    @classmethod
    def _valid_hostlist(cls, value: str) -> str:
        try:
            hosts = expand(value)
        except HostlistError as exc:
            raise ValueError(f"invalid hostlist: {exc}") from exc
        if not hosts:
            raise ValueError(f"hostlist {value!r} names no hosts")
        return value

    @model_validator(mode="after")
    def _layout_fits(self) -> NodeGroup:
        slices = sum(parse_mig_profile(p).slices for p in self.mig_layout)
        if slices > MIG_SLICES_PER_GPU:
            raise_problems(
                [(("mig_layout",), (f"MIG layout uses {slices} compute slices; a GPU has {MIG_SLICES_PER_GPU}"))]
            )
        return self

    def hostnames(self) -> list[str]:
        """The expanded host names, in hostlist order."""
        return expand(self.hosts)


class InventoryConfig(StrictModel):
    """The GPU hardware of one cluster."""

    node_groups: list[NodeGroup] = Field(min_length=1)

    @model_validator(mode="after")
    def _hosts_in_one_group(self) -> InventoryConfig:
        owner: dict[str, int] = {}
        problems: list[tuple[Loc, str]] = []
        for index, group in enumerate(self.node_groups):
            clashes: dict[int, list[str]] = {}
            for host in group.hostnames():
                if host in owner:
                    clashes.setdefault(owner[host], []).append(host)
                else:
                    owner[host] = index
            for other, hosts in clashes.items():
                shown = ", ".join(hosts[:5]) + (f" and {len(hosts) - 5} more" if len(hosts) > 5 else "")
                problems.append(
                    (
                        ("node_groups", index, "hosts"),
                        f"host(s) {shown} already in node_groups[{other}]; a host belongs to one node group",
                    )
                )
        raise_problems(problems)
        return self
