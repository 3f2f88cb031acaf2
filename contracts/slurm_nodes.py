"""Slurm node records as ``scontrol show node --oneliner`` prints them: the GPUs each node has.

One row per node and GPU GRES type (``Gres=gpu:h200:8,gpu:1g.10gb:7`` gives two rows); a node
without GPU GRES gives one row with ``gpus`` 0 and ``gpu_type`` null, so that it is still seen.
``mig_profile`` is set when the type names a MIG profile (``1g.10gb``, ``a100_3g.20gb``,
``1g.12gb+me``): such a row counts MIG instances, not whole GPUs. ``state`` and ``reason`` are as
Slurm printed them (``IDLE+DRAIN``, ``MIXED+MAINTENANCE+RESERVED``, ``DOWN*``); ``read_at`` is when
the record was read (command mode) or the time the caller gives a saved output (file mode).
"""

from __future__ import annotations

import polars as pl

from contracts.sources import SLURM_NODES

SLURM_NODES_SOURCE = SLURM_NODES  # the source of their landings and quarantined lines

SLURM_NODE_SCHEMA: dict[str, pl.DataType] = {
    "cluster": pl.String(),
    "hostname": pl.String(),  # NodeName
    "gpu_type": pl.String(),  # the GRES type ("h200", "a100_3g.20gb"); null: untyped, or no GPUs
    "mig_profile": pl.String(),  # "3g.20gb" when the type is a MIG profile, else null
    "gpus": pl.Int32(),  # count of this type (MIG instances for a MIG type)
    "state": pl.String(),
    "reason": pl.String(),  # "" when none
    "read_at": pl.Datetime("us"),  # UTC
    "source": pl.String(),  # the command or file read
    "line_no": pl.Int64(),
}

# Node state flags (scontrol's ``State=``, ``+``-joined) of hardware that is not there to run work:
# declared for later (FUTURE), or a cloud / power-saving node that is powered off or powering off
# (POWERED_DOWN, POWERING_DOWN; older releases: POWER_DOWN, POWERING_UP is on its way up and counts).
# Such a node's GRES are no capacity.
NOT_CAPACITY_FLAGS: tuple[str, ...] = ("FUTURE", "POWERED_DOWN", "POWERING_DOWN", "POWER_DOWN")
