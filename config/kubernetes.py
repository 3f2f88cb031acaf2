"""``[clusters.kubernetes]``: GPU pods from kube-state-metrics (and Kueue / Volcano) series.

Kubernetes keeps no history of finished pods; the history is what Prometheus scraped from
kube-state-metrics next to dcgm-exporter. Metric names default to kube-state-metrics v2,
Kueue v0.x and Volcano 1.x names; a site that relabels them overrides them here.
"""

from __future__ import annotations

import re

from pydantic import Field, field_validator, model_validator

from config.base import ConfigPath, Loc, PositiveInt, StrictModel, raise_problems

_METRIC_NAME = re.compile(r"^[A-Za-z_:][A-Za-z0-9_:]*$")
_LABEL_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _check_names(model: StrictModel, pattern: re.Pattern[str], what: str) -> list[tuple[Loc, str]]:
    return [
        ((key,), f"{value!r} is not a valid Prometheus {what} name")
        for key, value in model.__dict__.items()
        if isinstance(value, str) and not pattern.match(value)
    ]


class KubeMetricNames(StrictModel):
    """kube-state-metrics v2 metric names."""

    pod_info: str = "kube_pod_info"
    pod_labels: str = "kube_pod_labels"
    namespace_labels: str = "kube_namespace_labels"
    resource_requests: str = "kube_pod_container_resource_requests"
    resource_limits: str = "kube_pod_container_resource_limits"
    pod_created: str = "kube_pod_created"
    pod_scheduled: str = "kube_pod_status_scheduled_time"
    pod_start: str = "kube_pod_start_time"
    pod_phase: str = "kube_pod_status_phase"
    pod_completion: str = "kube_pod_completion_time"

    @model_validator(mode="after")
    def _valid(self) -> KubeMetricNames:
        raise_problems(_check_names(self, _METRIC_NAME, "metric"))
        return self


class KubeNodeMetricNames(StrictModel):
    """kube-state-metrics v2 node series: advertised GPUs, node labels, conditions, cordon."""

    node_capacity: str = "kube_node_status_capacity"
    node_labels: str = "kube_node_labels"
    node_condition: str = "kube_node_status_condition"
    node_unschedulable: str = "kube_node_spec_unschedulable"

    @model_validator(mode="after")
    def _valid(self) -> KubeNodeMetricNames:
        raise_problems(_check_names(self, _METRIC_NAME, "metric"))
        return self


class KueueConfig(StrictModel):
    """Kueue's controller metrics (per ClusterQueue)."""

    enabled: bool = False
    admission_wait: str = "kueue_admission_wait_time_seconds"  # histogram: _sum, _count, _bucket
    pending_workloads: str = "kueue_pending_workloads"
    resource_usage: str = "kueue_cluster_queue_resource_usage"
    nominal_quota: str = "kueue_cluster_queue_nominal_quota"

    @model_validator(mode="after")
    def _valid(self) -> KueueConfig:
        raise_problems(_check_names(self, _METRIC_NAME, "metric"))
        return self

    def metrics(self) -> list[str]:
        """Every series name read: the histogram's buckets, sum and count, and the gauges."""
        wait = self.admission_wait
        return [
            f"{wait}_sum",
            f"{wait}_count",
            f"{wait}_bucket",
            self.pending_workloads,
            self.resource_usage,
            self.nominal_quota,
        ]


class VolcanoConfig(StrictModel):
    """Volcano's scheduler metrics."""

    enabled: bool = False
    job_scheduling_duration: str = "volcano_e2e_job_scheduling_duration"  # gauge, milliseconds

    @model_validator(mode="after")
    def _valid(self) -> VolcanoConfig:
        raise_problems(_check_names(self, _METRIC_NAME, "metric"))
        return self


class KubernetesConfig(StrictModel):
    """Where the pod history comes from and which labels say who owns a pod."""

    # Read the series from this OpenMetrics file instead of [clusters.prometheus] (simulator output).
    path: ConfigPath | None = None
    # Extra label matchers for every kube-state-metrics / Kueue / Volcano query.
    selector: str = ""
    metric_names: KubeMetricNames = Field(default_factory=KubeMetricNames)
    node_metric_names: KubeNodeMetricNames = Field(default_factory=KubeNodeMetricNames)
    # Pod labels, then namespace labels, in this order: the first non-empty one names the department.
    department_labels: list[str] = Field(default_factory=lambda: ["label_department", "label_team"])
    # The LocalQueue a pod was submitted to (Kueue's `kueue.x-k8s.io/queue-name` label).
    queue_label: str = "label_kueue_x_k8s_io_queue_name"
    # Other kube_pod_labels / kube_namespace_labels labels kept in the raw table (the
    # department and queue labels are always kept; everything else is dropped on ingest).
    label_allowlist: list[str] = Field(default_factory=list)
    gpu_resource: str = "nvidia_com_gpu"  # whole GPUs (resource label as kube-state-metrics sanitizes it)
    mig_resource_prefix: str = "nvidia_com_mig_"  # nvidia_com_mig_3g_40gb -> MIG profile 3g.40gb
    # kube-state-metrics scrape interval (the end error bound); default: the cluster's sample step.
    step_seconds: PositiveInt | None = None
    kueue: KueueConfig = Field(default_factory=KueueConfig)
    volcano: VolcanoConfig = Field(default_factory=VolcanoConfig)

    @field_validator("selector")
    @classmethod
    def _braced(cls, value: str) -> str:
        stripped = value.strip()
        if stripped and not (stripped.startswith("{") and stripped.endswith("}")):
            raise ValueError(
                f"must be empty or label matchers in braces, e.g. '{{job=\"kube-state-metrics\"}}' (got {value!r})"
            )
        return stripped

    @model_validator(mode="after")
    def _labels(self) -> KubernetesConfig:
        problems: list[tuple[Loc, str]] = []
        if not self.department_labels:
            problems.append((("department_labels",), "list at least one label (e.g. 'label_department')"))
        for key in ("department_labels", "label_allowlist"):
            for index, name in enumerate(getattr(self, key)):
                if not _LABEL_NAME.match(name):
                    problems.append(((key, index), f"{name!r} is not a valid Prometheus label name"))
        for key in ("queue_label", "gpu_resource", "mig_resource_prefix"):
            if not _LABEL_NAME.match(getattr(self, key)):
                problems.append(((key,), f"{getattr(self, key)!r} is not a valid label name or resource"))
        raise_problems(problems)
        return self

    @property
    def kept_labels(self) -> list[str]:
        """Pod / namespace labels kept on ingest: department labels, queue label, allowlist."""
        out: list[str] = []
        for name in [*self.department_labels, self.queue_label, *self.label_allowlist]:
            if name not in out:
                out.append(name)
        return out

    def pod_metrics(self) -> list[str]:
        """The kube-state-metrics series read per pod (plus namespace labels)."""
        return list(self.metric_names.__dict__.values())

    def node_metrics(self) -> list[str]:
        """The kube-state-metrics series read per node (advertised GPUs, labels, conditions)."""
        return list(self.node_metric_names.__dict__.values())
