"""Simulated hardware: the node layout, the inventory frame, and where a GPU request fits."""

from simulate.hardware import (
    GPUS_PER_NODE,
    MIG_GI_IDS,
    MIG_LAYOUT,
    MIG_MEMORY_MIB,
    MIG_SLICES,
    MODELS,
    NODES_PER_SWITCH,
    PCI_BUSES,
    Cluster,
    GpuModel,
    Node,
    Slot,
    build_cluster,
    mig_fraction,
    slot_table,
)
from simulate.inventory import INVENTORY_SCHEMA, NodeGroup, build_inventory, node_groups
from simulate.placement import FreeSlots, Request

__all__ = [  # re-exported: callers import the simulated hardware from here
    "GPUS_PER_NODE",
    "INVENTORY_SCHEMA",
    "MIG_GI_IDS",
    "MIG_LAYOUT",
    "MIG_MEMORY_MIB",
    "MIG_SLICES",
    "MODELS",
    "NODES_PER_SWITCH",
    "PCI_BUSES",
    "Cluster",
    "FreeSlots",
    "GpuModel",
    "Node",
    "NodeGroup",
    "Request",
    "Slot",
    "build_cluster",
    "build_inventory",
    "mig_fraction",
    "node_groups",
    "slot_table",
]
