"""normalize_series: dcgm-exporter label spellings -> the RAW_SAMPLE_SCHEMA label columns."""

from __future__ import annotations

import json

import polars as pl
import pytest

from contracts.exporters import DCGM
from contracts.schemas import LABEL_COLUMNS, RAW_SAMPLE_SCHEMA
from sources.series_labels import SCHEMA, normalize_series

SM = "DCGM_FI_PROF_SM_ACTIVE"


def series_frame(*label_sets: dict[str, str | None]) -> pl.DataFrame:
    """LongSamples.series: series_id 1.., one String column per label name seen."""
    names = sorted({name for labels in label_sets for name in labels})
    rows = [
        {"series_id": i + 1, "__name__": SM, **dict.fromkeys(names), **labels} for i, labels in enumerate(label_sets)
    ]
    schema = {"series_id": pl.UInt32(), "__name__": pl.String(), **{name: pl.String() for name in names}}
    return pl.DataFrame(rows, schema=schema)


def normalize_one(labels: dict[str, str | None], **kwargs) -> dict:
    out = normalize_series(series_frame(labels), DCGM, **kwargs)
    assert out.height == 1
    return out.row(0, named=True)


BASE = {
    "gpu": "3",
    "UUID": "GPU-1",
    "modelName": "NVIDIA H100 80GB HBM3",
    "pci_bus_id": "00000000:1B:00.0",
    "device": "nvidia3",
}
EXPORTER = {"pod": "dcgm-exporter-x7k", "namespace": "gpu-operator", "container": "nvidia-dcgm-exporter"}

# labels -> (hostname, pod, namespace, container, extra_labels)
SPELLINGS = [
    pytest.param({"Hostname": "n1"}, ("n1", None, None, None, "{}"), id="released-Hostname"),
    pytest.param({"hostname": "n1"}, ("n1", None, None, None, "{}"), id="newer-hostname"),
    pytest.param(
        {"Hostname": "exp-pod", "hostname": "n1"},
        ("exp-pod", None, None, None, '{"hostname":"n1"}'),
        id="both-Hostname-wins",
    ),
    pytest.param({"Hostname": "", "hostname": "n1"}, ("n1", None, None, None, "{}"), id="empty-Hostname-is-absent"),
    pytest.param(
        {"hostname": "n1", "pod": "train-0", "namespace": "ml", "container": "main"},
        ("n1", "train-0", "ml", "main", "{}"),
        id="k8s-direct",
    ),
    pytest.param(
        {
            "hostname": "n1",
            "exported_pod": "train-0",
            "exported_namespace": "ml",
            "exported_container": "main",
            **EXPORTER,
        },
        (
            "n1",
            "train-0",
            "ml",
            "main",
            '{"container":"nvidia-dcgm-exporter","namespace":"gpu-operator","pod":"dcgm-exporter-x7k"}',
        ),
        id="k8s-exported-rename",
    ),
    pytest.param(
        {"hostname": "n1", "pod_name": "train-0", "pod_namespace": "ml"},
        ("n1", "train-0", "ml", None, "{}"),
        id="old-pod_name",
    ),
    pytest.param(
        {"hostname": "n1", "pod": "train-0", "pod_name": "old-0", "namespace": "ml", "pod_namespace": "ml"},
        ("n1", "train-0", "ml", None, '{"pod_name":"old-0","pod_namespace":"ml"}'),
        id="pod-beats-pod_name",
    ),
    pytest.param(
        {"hostname": "n1", "pod": "", "namespace": ""}, ("n1", None, None, None, "{}"), id="empty-pod-is-absent"
    ),
    pytest.param(
        {
            "hostname": "n1",
            "instance": "10.0.0.1:9400",
            "job": "dcgm",
            "DCGM_FI_DRIVER_VERSION": "550.54.15",
            "err_code": "0",
            "site": "eu",
        },
        (
            "n1",
            None,
            None,
            None,
            '{"DCGM_FI_DRIVER_VERSION":"550.54.15","err_code":"0","instance":"10.0.0.1:9400","job":"dcgm","site":"eu"}',
        ),
        id="unknown-labels-kept-sorted",
    ),
    pytest.param({}, (None, None, None, None, "{}"), id="no-host-at-all"),
]


@pytest.mark.parametrize(("labels", "expected"), SPELLINGS)
def test_label_spellings(labels: dict, expected: tuple) -> None:
    row = normalize_one({**BASE, **labels})
    assert (row["hostname"], row["pod"], row["namespace"], row["container"], row["extra_labels"]) == expected
    assert (row["gpu"], row["uuid"], row["model_name"], row["pci_bus_id"], row["device"]) == (
        3,
        "GPU-1",
        "NVIDIA H100 80GB HBM3",
        "00000000:1B:00.0",
        "nvidia3",
    )
    assert row["field"] == "sm_active"


def test_output_schema_and_mig_and_job_labels() -> None:
    out = normalize_series(
        series_frame({**BASE, "Hostname": "n1", "GPU_I_ID": "2", "GPU_I_PROFILE": "1g.10gb", "hpc_job": "4711"}),
        DCGM,
    )
    assert out.schema == pl.Schema(SCHEMA)
    assert out.columns == ["series_id", "field", *[c for c in RAW_SAMPLE_SCHEMA if c in LABEL_COLUMNS]]
    row = out.row(0, named=True)
    assert (row["gpu_i_id"], row["gpu_i_profile"], row["hpc_job"]) == (2, "1g.10gb", "4711")


def test_only_name_and_id_gives_all_null_labels() -> None:
    frame = pl.DataFrame(
        {"series_id": [7], "__name__": ["DCGM_FI_DEV_POWER_USAGE"]}, schema_overrides={"series_id": pl.UInt32}
    )
    row = normalize_series(frame, DCGM).row(0, named=True)
    assert row["field"] == "power_w" and row["extra_labels"] == "{}"
    assert all(row[c] is None for c in LABEL_COLUMNS if c != "extra_labels")


def test_extra_labels_is_json_dumps_with_sorted_keys_and_escaping() -> None:
    odd = {"zeta": 'a"b\\c', "alpha": "é ✓", "ctl": "x\ny\t\u0001", "Upper": "1"}
    row = normalize_one({"hostname": "n1", **odd})
    assert row["extra_labels"] == json.dumps(odd, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert json.loads(row["extra_labels"]) == odd


def test_extra_labels_do_not_depend_on_column_order() -> None:
    frame = series_frame({"hostname": "n1", "b": "2", "a": "1", "instance": "i"})
    reordered = frame.select("series_id", "__name__", *reversed(frame.columns[2:]))
    assert normalize_series(frame, DCGM).equals(normalize_series(reordered, DCGM))
    assert normalize_series(frame, DCGM)["extra_labels"].item() == '{"a":"1","b":"2","instance":"i"}'


def test_rename_is_decided_per_scrape_job_so_idle_gpus_are_not_charged_to_the_exporter() -> None:
    busy = {
        "hostname": "n1",
        "gpu": "0",
        "job": "gpu-metrics",
        "exported_pod": "train-0",
        "exported_namespace": "ml",
        **EXPORTER,
    }
    idle = {"hostname": "n1", "gpu": "1", "job": "gpu-metrics", **EXPORTER}  # no workload on this GPU
    other_job = {"hostname": "n2", "gpu": "0", "job": "honor-labels", "pod": "infer-1", "namespace": "web"}
    out = normalize_series(series_frame(busy, idle, other_job), DCGM)
    rows = out.select("pod", "namespace", "container", "extra_labels").rows()
    exporter_extra = (
        '"container":"nvidia-dcgm-exporter","job":"gpu-metrics","namespace":"gpu-operator","pod":"dcgm-exporter-x7k"'
    )
    assert rows == [
        ("train-0", "ml", None, "{" + exporter_extra + "}"),
        (None, None, None, "{" + exporter_extra + "}"),
        ("infer-1", "web", None, '{"job":"honor-labels"}'),
    ]


def test_without_job_label_the_rename_is_decided_for_the_whole_frame() -> None:
    out = normalize_series(
        series_frame({"gpu": "0", "exported_pod": "train-0", "pod": "exp"}, {"gpu": "1", "pod": "exp"}), DCGM
    )
    assert out.select("pod", "extra_labels").rows() == [("train-0", '{"pod":"exp"}'), (None, '{"pod":"exp"}')]


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        ("direct", ("dcgm-exporter-x7k", '{"exported_pod":"train-0"}')),
        ("exported", ("train-0", '{"pod":"dcgm-exporter-x7k"}')),
    ],
)
def test_kubernetes_label_mode_can_be_forced(mode: str, expected: tuple) -> None:
    row = normalize_one({"exported_pod": "train-0", "pod": "dcgm-exporter-x7k"}, kubernetes_labels=mode)
    # "direct" keeps exported_pod as an unknown label
    assert (row["pod"], row["extra_labels"]) == expected


def test_forced_direct_keeps_exported_labels_in_extra() -> None:
    row = normalize_one({"exported_pod": "train-0", "pod": "p"}, kubernetes_labels="direct")
    assert json.loads(row["extra_labels"]) == {"exported_pod": "train-0"}


def test_bad_kubernetes_mode_raises() -> None:
    with pytest.raises(ValueError, match="kubernetes_labels"):
        normalize_series(series_frame({"gpu": "0"}), DCGM, kubernetes_labels="guess")  # type: ignore[arg-type]


def test_site_metric_names_map_through_the_renamed_exporter() -> None:
    frame = series_frame({"gpu": "0"}).with_columns(pl.lit("site_sm_active").alias("__name__"))
    site = DCGM.renamed({SM: "site_sm_active"})
    assert normalize_series(frame, site)["field"].to_list() == ["sm_active"]
    with pytest.raises(ValueError, match=SM):
        normalize_series(series_frame({"gpu": "0"}), site)


def test_unknown_metric_raises_naming_it() -> None:
    frame = pl.concat(
        [
            series_frame({"gpu": "0"}),
            series_frame({"gpu": "1"}).with_columns(
                pl.lit(2, dtype=pl.UInt32).alias("series_id"), pl.lit("DCGM_FI_DEV_SM_CLOCK").alias("__name__")
            ),
        ]
    )
    with pytest.raises(ValueError, match="DCGM_FI_DEV_SM_CLOCK"):
        normalize_series(frame, DCGM)


@pytest.mark.parametrize(
    ("label", "value"), [("gpu", "zero"), ("gpu", "70000"), ("GPU_I_ID", "1a"), ("GPU_I_ID", "1.5")]
)
def test_non_integer_gpu_or_instance_raises_naming_the_series(label: str, value: str) -> None:
    with pytest.raises(
        ValueError,
        match=rf"{label}.*'hostname': 'n9'.*'{label}': '{value}'|{label}.*'{label}': '{value}'.*'hostname': 'n9'",
    ):
        normalize_series(series_frame({"gpu": "0", "hostname": "n9", label: value}), DCGM)


def test_duplicate_series_id_raises() -> None:
    frame = series_frame({"gpu": "0"}, {"gpu": "1"}).with_columns(pl.lit(1, dtype=pl.UInt32).alias("series_id"))
    with pytest.raises(ValueError, match="series_id"):
        normalize_series(frame, DCGM)


def test_many_series_vectorized() -> None:
    n = 20_000
    frame = pl.DataFrame(
        {
            "series_id": pl.arange(0, n, eager=True).cast(pl.UInt32),
            "__name__": [SM] * n,
            "Hostname": [f"n{i // 8}" for i in range(n)],
            "gpu": [str(i % 8) for i in range(n)],
            "instance": [f"10.0.0.{i // 8 % 250}:9400" for i in range(n)],
        }
    )
    out = normalize_series(frame, DCGM)
    assert out.height == n
    assert out.row(9, named=True)["extra_labels"] == '{"instance":"10.0.0.1:9400"}'
