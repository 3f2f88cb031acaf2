"""contracts.signals: the vocabulary cardhours names, and what derives from it."""

from __future__ import annotations

import pytest

from contracts.schemas import LABEL_COLUMNS, RAW_SAMPLE_SCHEMA, SAMPLE_VALUE_COLUMNS
from contracts.signals import BEST_SIGNAL_ORDER, SIGNALS, signal
from sources.prometheus.source import READ_RAW_WHEN_DOWNSAMPLING, downsample_function


def test_raw_columns_derive_from_the_signals() -> None:
    # raw.dcgm_samples and the warehouse digests depend on this order (the signals' order,
    # pinned by test_units_kinds_and_reductions below).
    assert SAMPLE_VALUE_COLUMNS == [s.name for s in SIGNALS]
    labels = ["hostname", "gpu", "uuid", "model_name", "pci_bus_id", "device", "gpu_i_id", "gpu_i_profile", "hpc_job"]
    workload = ["pod", "namespace", "container", "extra_labels"]
    assert LABEL_COLUMNS == [*labels, *workload]
    assert list(RAW_SAMPLE_SCHEMA) == ["cluster", "day", "ts", *labels, *SAMPLE_VALUE_COLUMNS, *workload]


def test_units_kinds_and_reductions() -> None:
    declared = {s.name: (s.unit, s.kind, s.reduce) for s in SIGNALS}
    assert list(declared.items()) == list(
        {
            "gpu_util": ("%", "gauge", "avg"),
            "gr_engine_active": ("ratio", "gauge", "avg"),
            "sm_active": ("ratio", "gauge", "avg"),
            "sm_occupancy": ("ratio", "gauge", "avg"),
            "tensor_active": ("ratio", "gauge", "avg"),
            "dram_active": ("ratio", "gauge", "avg"),
            "fb_used_mib": ("MiB", "gauge", "max"),
            "fb_free_mib": ("MiB", "gauge", "min"),
            "power_w": ("W", "gauge", "avg"),
            "energy_mj": ("mJ", "counter", "last"),
        }.items()
    )
    assert all(s.description for s in SIGNALS)
    assert BEST_SIGNAL_ORDER == ("sm_active", "gr_engine_active", "gpu_util")


def test_server_side_downsampling_follows_the_signals() -> None:
    functions = {name: downsample_function(name) for name in SAMPLE_VALUE_COLUMNS}
    assert functions == {
        **dict.fromkeys(["gpu_util", "gr_engine_active", "sm_active", "sm_occupancy"], "avg_over_time"),
        **dict.fromkeys(["tensor_active", "dram_active", "power_w"], "avg_over_time"),
        "fb_used_mib": "max_over_time",
        "fb_free_mib": "min_over_time",
        "energy_mj": "last_over_time",
    }
    assert READ_RAW_WHEN_DOWNSAMPLING == ("energy_mj",)


def test_unknown_signal_is_named() -> None:
    with pytest.raises(KeyError, match="unknown signal 'sm_busy'; known: \\['gpu_util'"):
        signal("sm_busy")
    with pytest.raises(KeyError, match="sm_busy"):
        downsample_function("sm_busy")
