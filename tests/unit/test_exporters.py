"""contracts.exporters: the dcgm-exporter mapping, the registry, and what a mapping may declare."""

from __future__ import annotations

import pytest

from contracts.exporters import DCGM, DEFAULT_EXPORTER, EXPORTERS, Exporter, ExporterMetric, SeriesLabels, get_exporter
from contracts.schemas import SAMPLE_VALUE_COLUMNS

HOST = SeriesLabels(hostname=("node",))


def test_dcgm_maps_every_signal_at_unit_scale() -> None:
    assert DCGM.metric_signals == {
        "DCGM_FI_DEV_GPU_UTIL": "gpu_util",
        "DCGM_FI_PROF_GR_ENGINE_ACTIVE": "gr_engine_active",
        "DCGM_FI_PROF_SM_ACTIVE": "sm_active",
        "DCGM_FI_PROF_SM_OCCUPANCY": "sm_occupancy",
        "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": "tensor_active",
        "DCGM_FI_PROF_DRAM_ACTIVE": "dram_active",
        "DCGM_FI_DEV_FB_USED": "fb_used_mib",
        "DCGM_FI_DEV_FB_FREE": "fb_free_mib",
        "DCGM_FI_DEV_POWER_USAGE": "power_w",
        "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": "energy_mj",
    }
    assert list(DCGM.metric_signals.values()) == SAMPLE_VALUE_COLUMNS
    assert DCGM.scales == {}
    assert all(metric.help for metric in DCGM.metrics)


def test_dcgm_labels() -> None:
    labels = DCGM.labels
    written = ["hostname", "gpu", "uuid", "model_name", "pci_bus_id", "device", "gpu_i_id", "gpu_i_profile", "hpc_job"]
    assert [labels.label_of(c) for c in written] == [
        "Hostname",
        "gpu",
        "UUID",
        "modelName",
        "pci_bus_id",
        "device",
        "GPU_I_ID",
        "GPU_I_PROFILE",
        "hpc_job",
    ]
    assert labels.hostname == ("Hostname", "hostname")
    assert dict(labels.workload) == {
        "pod": ("pod", "pod_name"),
        "namespace": ("namespace", "pod_namespace"),
        "container": ("container",),
    }
    assert labels.label_of("extra_labels") is None


def test_registry() -> None:
    assert DEFAULT_EXPORTER == "dcgm" and EXPORTERS == {"dcgm": DCGM}
    assert get_exporter("dcgm") is DCGM
    with pytest.raises(KeyError, match=r"unknown metrics exporter 'rocm'; known: \['dcgm'\]"):
        get_exporter("rocm")


def test_renamed_keeps_signals_and_refuses_unknown_names() -> None:
    site = DCGM.renamed({"DCGM_FI_PROF_SM_ACTIVE": "dcgm_sm_active"})
    assert list(site.metric_signals)[2] == "dcgm_sm_active" and site.metric_signals["dcgm_sm_active"] == "sm_active"
    assert DCGM.renamed({}) is DCGM
    with pytest.raises(KeyError, match=r"dcgm-exporter has no metrics \['DCGM_FI_NOPE'\]"):
        DCGM.renamed({"DCGM_FI_NOPE": "x"})


@pytest.mark.parametrize(
    ("metrics", "message"),
    [
        ((ExporterMetric("a", "sm_busy"),), r"unknown signals \['sm_busy'\]"),
        ((ExporterMetric("a", "power_w"), ExporterMetric("b", "power_w")), r"carried by two metrics: \['power_w'\]"),
        ((ExporterMetric("a", "power_w"), ExporterMetric("a", "energy_mj")), r"metrics listed twice: \['a'\]"),
        ((ExporterMetric("a", "power_w", scale=-1.0),), r"scale must be positive .*\['a'\]"),
    ],
)
def test_bad_metric_mappings_are_refused(metrics: tuple[ExporterMetric, ...], message: str) -> None:
    with pytest.raises(ValueError, match=r"exporter 'x': .*" + message):
        Exporter("x", "x", metrics, HOST)


@pytest.mark.parametrize(
    ("labels", "message"),
    [
        (dict(hostname=("h",), strings={"n": "hostname"}), r"columns filled by two rules: \['hostname'\]"),
        (dict(hostname=("h",), strings={"r": "rack"}), r"unknown label columns \['rack'\]"),
        (dict(hostname=("h",), strings={"x": "extra_labels"}), r"unknown label columns \['extra_labels'\]"),
        (dict(hostname=("h",), integers={"u": "uuid"}), r"integer rules for text columns \['uuid'\]"),
        (dict(hostname=("h",), strings={"g": "gpu"}), r"string rules for integer columns \['gpu'\]"),
        (dict(hostname=("h",), workload={"job": ("j",)}), "workload rules name"),
        (dict(hostname=("h",), workload={"pod": ()}), "workload rules name"),
        (dict(hostname=("h",), strings={"h": "uuid"}), r"labels used by two rules: \['h'\]"),
    ],
)
def test_bad_label_rules_are_refused(labels: dict, message: str) -> None:
    with pytest.raises(ValueError, match="bad label rules: .*" + message):
        SeriesLabels(**labels)
