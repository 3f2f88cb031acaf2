"""The GPU signals cardhours knows, named by cardhours: one declaration, every exporter maps onto it.

A signal is one measured quantity of a GPU or MIG instance in cardhours' own unit. Its
name is the column it fills in ``raw.dcgm_samples`` (``RAW_SAMPLE_SCHEMA``), so names and
order are public: the warehouse table, the digests and the marts depend on them. An
exporter's mapping (``contracts.exporters``) says which of its metrics carries each signal
and with what unit scale; nothing else names an exporter's metrics.

``reduce`` is how a server-side downsampled read summarizes the signal over a step
(``sources.prometheus.source``): gauges sampled at random instants average (the step's
mean), memory used keeps its peak (capacity questions need it) and memory free its
minimum (at the peak, free memory is lowest); a counter is never averaged: a step carries
a reading, its last one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Kind = Literal["gauge", "counter"]
Reduce = Literal["avg", "max", "min", "last"]


@dataclass(frozen=True)
class Signal:
    """One signal: its column name, unit, kind, downsampling reduction and meaning."""

    name: str
    unit: str
    kind: Kind
    reduce: Reduce
    description: str
    # Lowest and highest plausible value in the signal's unit (None: unbounded on that side);
    # the sample screening quarantines what falls outside, and the GX suite checks the same.
    low: float | None = 0.0
    high: float | None = None


# In raw column order (RAW_SAMPLE_SCHEMA's value columns): do not reorder.
SIGNALS: tuple[Signal, ...] = (
    Signal("gpu_util", "%", "gauge", "avg", "share of time a kernel ran on the GPU, 0-100 (coarse)", high=100.0),
    Signal(
        "gr_engine_active", "ratio", "gauge", "avg", "share of time the graphics/compute engine was busy, 0-1", high=1.0
    ),
    Signal(
        "sm_active", "ratio", "gauge", "avg", "share of cycles an SM had a warp assigned, mean over SMs, 0-1", high=1.0
    ),
    Signal("sm_occupancy", "ratio", "gauge", "avg", "resident warps per SM over the maximum, 0-1", high=1.0),
    Signal("tensor_active", "ratio", "gauge", "avg", "share of cycles the tensor pipes were busy, 0-1", high=1.0),
    Signal(
        "dram_active", "ratio", "gauge", "avg", "share of cycles device memory was sending or receiving, 0-1", high=1.0
    ),
    Signal("fb_used_mib", "MiB", "gauge", "max", "device memory in use"),
    Signal("fb_free_mib", "MiB", "gauge", "min", "device memory free"),
    Signal("power_w", "W", "gauge", "avg", "power draw", high=3000.0),
    Signal("energy_mj", "mJ", "counter", "last", "energy used since the driver loaded (resets at reboot)"),
)
SIGNAL_NAMES: tuple[str, ...] = tuple(signal.name for signal in SIGNALS)
BY_NAME: dict[str, Signal] = {signal.name: signal for signal in SIGNALS}

# Activity signals from most to least faithful; the first one present in a sample is its "best".
BEST_SIGNAL_ORDER: tuple[str, ...] = ("sm_active", "gr_engine_active", "gpu_util")

if len(BY_NAME) != len(SIGNALS) or not set(BEST_SIGNAL_ORDER) <= set(BY_NAME):
    raise ValueError("signal names must be unique and BEST_SIGNAL_ORDER must name signals")
if any(signal.kind == "counter" and signal.reduce != "last" for signal in SIGNALS):
    raise ValueError("a counter must reduce by its last reading: averaging a counter is meaningless")


def signal(name: str) -> Signal:
    """The signal called ``name``; ``KeyError`` naming the known ones otherwise."""
    try:
        return BY_NAME[name]
    except KeyError:
        raise KeyError(f"unknown signal {name!r}; known: {list(SIGNAL_NAMES)}") from None
