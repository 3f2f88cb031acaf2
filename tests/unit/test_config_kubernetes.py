"""[clusters.kubernetes]: defaults, the example, and mistakes reported at their key."""

from __future__ import annotations

import copy
import tomllib
from typing import Any

import pytest

from config import EXAMPLE_CONFIG, ConfigError, load_config, parse_config
from config.kubernetes import KubernetesConfig

EXAMPLE: dict[str, Any] = tomllib.loads(EXAMPLE_CONFIG.read_text())


def with_kube(kube: dict[str, Any] | None, drop_prometheus: bool = False) -> dict[str, Any]:
    data = copy.deepcopy(EXAMPLE)
    cluster = data["clusters"][0]
    if kube is None:
        cluster.pop("kubernetes", None)
    else:
        cluster["kubernetes"] = kube
    if drop_prometheus:
        cluster.pop("prometheus")
        cluster["metrics"] = {"source": "file", "path": "metrics"}
    return data


def problems(data: dict[str, Any]) -> list[str]:
    with pytest.raises(ConfigError) as info:
        parse_config(data, source="site.toml")
    return [f"{p.key}: {p.reason}" for p in info.value.problems]


def test_example_has_the_section_with_v2_defaults() -> None:
    kube = load_config(EXAMPLE_CONFIG).cluster("alpha").kubernetes
    assert kube is not None and kube.metric_names.pod_info == "kube_pod_info"
    assert kube.kept_labels == ["label_department", "label_team", "label_kueue_x_k8s_io_queue_name"]
    assert not kube.kueue.enabled and "kube_pod_completion_time" in kube.pod_metrics()
    assert KubernetesConfig().kueue.metrics()[:2] == [
        "kueue_admission_wait_time_seconds_sum",
        "kueue_admission_wait_time_seconds_count",
    ]


def test_section_is_optional() -> None:
    assert parse_config(with_kube(None)).clusters[0].kubernetes is None


def test_needs_prometheus_or_a_path() -> None:
    assert any(p.startswith("clusters[0].kubernetes.path:") for p in problems(with_kube({}, drop_prometheus=True)))
    config = parse_config(with_kube({"path": "kube_state.om"}, drop_prometheus=True))
    assert config.clusters[0].kubernetes.path.name == "kube_state.om"


@pytest.mark.parametrize(
    ("kube", "key"),
    [
        ({"department_labels": []}, "clusters[0].kubernetes.department_labels"),
        ({"department_labels": ["label-department"]}, "clusters[0].kubernetes.department_labels[0]"),
        ({"queue_label": "queue name"}, "clusters[0].kubernetes.queue_label"),
        ({"metric_names": {"pod_info": "kube pod info"}}, "clusters[0].kubernetes.metric_names.pod_info"),
        ({"metric_names": {"pod_infos": "x"}}, "clusters[0].kubernetes.metric_names.pod_infos"),
        ({"kueue": {"pending_workloads": "1bad"}}, "clusters[0].kubernetes.kueue.pending_workloads"),
        ({"selector": 'job="ksm"'}, "clusters[0].kubernetes.selector"),
        ({"step_seconds": 0}, "clusters[0].kubernetes.step_seconds"),
    ],
)
def test_mistakes_name_the_key(kube: dict[str, Any], key: str) -> None:
    assert any(p.startswith(key + ":") for p in problems(with_kube(kube))), problems(with_kube(kube))
