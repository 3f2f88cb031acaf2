"""GPUs held according to a sacct TRES string: whole GPUs, typed GPUs and MIG slices."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import NamedTuple

import polars as pl

from transforms.helpers.slurm_policy import MAX_GPU_COUNT, reason
from transforms.helpers.slurm_values import SlurmParseError

MIG_SLICES = 7  # compute slices of a full A100/H100/H200; override per profile with weights


class GpuAlloc(NamedTuple):
    gpus: float  # whole GPUs; a MIG slice counts as its weight
    gpu_slots: int  # devices or MIG instances held
    gpu_type: str | None  # "h100", "3g.40gb"; sorted and comma-joined if several
    is_mig: bool


NO_GPUS = GpuAlloc(0.0, 0, None, False)
GPU_ALLOC_DTYPE = pl.Struct(
    {"gpus": pl.Float64(), "gpu_slots": pl.Int32(), "gpu_type": pl.String(), "is_mig": pl.Boolean()}
)

# "3g.40gb", "a100_3g.20gb", "nvidia_a100_3g.40gb", "1g.10gb+me"
_MIG_TYPE = re.compile(r"(?:^|_)(?P<profile>(?P<slices>[1-7])g\.\d+gb(?:\+me)?)$", re.IGNORECASE)


def mig_profile(gres_type: str) -> str | None:
    """The MIG profile named by a typed gres (``nvidia_a100_3g.40gb`` -> ``3g.40gb``)."""
    match = _MIG_TYPE.search(gres_type)
    return match.group("profile").lower() if match else None


def _mig_weight(gres_type: str, weights: Mapping[str, float] | None) -> float:
    """A slice's share of a GPU: the weight table (by full type, then profile), else slices/7."""
    profile = mig_profile(gres_type)
    assert profile is not None
    for key in (gres_type, profile):
        if weights and key in weights:
            return float(weights[key])
    return int(profile[0]) / MIG_SLICES


def _gpu_entries(tres: str) -> tuple[int | None, dict[str, int]]:
    """The untyped ``gres/gpu=N`` count (None if absent) and typed counts by type."""
    untyped: int | None = None
    typed: dict[str, int] = {}
    for item in tres.split(","):
        key, _, value = item.strip().partition("=")
        if key != "gres/gpu" and not key.startswith("gres/gpu:"):
            continue
        if not value.isdigit():
            raise SlurmParseError(f"bad GPU count in {item.strip()!r}")
        if int(value) > MAX_GPU_COUNT:
            raise SlurmParseError(
                reason("ABSURD_COUNT", f"GPU count {value} in {item.strip()!r} is beyond any cluster")
            )
        if key == "gres/gpu":
            untyped = int(value)
        else:
            gres_type = key.split(":", 1)[1]
            typed[gres_type] = typed.get(gres_type, 0) + int(value)
    return untyped, typed


def _type_label(types: list[str]) -> str | None:
    return ",".join(sorted(set(types))) or None


def parse_gpu_tres(tres: str | None, mig_weights: Mapping[str, float] | None = None) -> GpuAlloc:
    """GPUs held according to a TRES string (``...,gres/gpu:h100=2,gres/gpu=2,...``).

    The untyped count wins over typed ones (which repeat it); typed counts are used only
    when no untyped entry exists; the two are never summed. MIG typed entries win over the
    untyped count and count as fractions (``_mig_weight``); full-GPU typed entries next to
    MIG ones count whole.
    """
    untyped, typed = _gpu_entries(tres or "")
    mig = {t: n for t, n in typed.items() if mig_profile(t)}
    full = {t: n for t, n in typed.items() if t not in mig}
    if mig:
        gpus = sum(n * _mig_weight(t, mig_weights) for t, n in mig.items()) + sum(full.values())
        slots = sum(mig.values()) + sum(full.values())
        label = _type_label([mig_profile(t) or t for t in mig] + list(full))
        return GpuAlloc(float(gpus), slots, label, True)
    count = untyped if untyped is not None else sum(full.values())
    return GpuAlloc(float(count), count, _type_label(list(full)), False)
