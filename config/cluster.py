"""Per-cluster configuration: where metrics and scheduler records come from, and the hardware."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from config.base import (
    ConfigPath,
    EnvVarName,
    Loc,
    NonNegativeInt,
    PositiveFloat,
    PositiveInt,
    Slug,
    StrictModel,
    Text,
    did_you_mean,
    raise_problems,
)
from config.inventory import InventoryConfig
from config.kubernetes import KubernetesConfig
from config.urls import url_problem
from contracts.exporters import DEFAULT_EXPORTER, EXPORTERS
from contracts.sources import DCGM, KUBE, SACCT, SLURM_DOWNTIME, SLURM_NODES

DEFAULT_STEP_SECONDS = 30  # dcgm-exporter's and the simulator's usual sample spacing
# A shard's day at 30 s: about 0.75 M rows, about 1.5 GiB for the raw step (benchmarks/README.md, "Memory per
# worker"); 512 keeps the reference bench day (256 GPUs, 352 with MIG instances) one shard, at about 2.2 GiB.
DEFAULT_GPUS_PER_SHARD = 256
_METRIC_NAME = re.compile(r"^[A-Za-z_:][A-Za-z0-9_:]*$")


class MetricsConfig(StrictModel):
    """Where GPU samples come from, and in which exporter's names."""

    source: Literal["prometheus", "file"]
    # Whose metric and label names the samples carry (contracts.exporters.EXPORTERS).
    exporter: str = DEFAULT_EXPORTER
    path: ConfigPath | None = None  # simulator Parquet directory or .om file (source = "file")
    # Spacing of the samples in the files (source = "file"); Prometheus uses its own step_seconds.
    step_seconds: PositiveInt | None = None
    # The day's ingest check fails when more than this share of samples was quarantined.
    max_quarantine_share: float = Field(default=0.01, ge=0.0, le=1.0)
    # The daily ingest reads, screens and writes a day in shards of at most this many GPUs (a
    # GPU's series are never split; a host's GPUs without a UUID stay together), and rolls the
    # landed day up in shards of hosts of at most this many GPUs: a worker's memory follows
    # the shard, not the cluster (docs/storage.md, "Memory per worker").
    gpus_per_shard: PositiveInt = DEFAULT_GPUS_PER_SHARD

    @field_validator("exporter")
    @classmethod
    def _known_exporter(cls, value: str) -> str:
        if value not in EXPORTERS:
            raise ValueError(f"unknown exporter {value!r}{did_you_mean(value, EXPORTERS)}; known: {sorted(EXPORTERS)}")
        return value

    @model_validator(mode="after")
    def _path_for_file(self) -> MetricsConfig:
        if self.source == "file" and self.path is None:
            raise_problems([(("path",), "required key is missing: metrics.source is 'file'")])
        return self


class PrometheusConfig(StrictModel):
    """The Prometheus-compatible HTTP API serving the exporter's series."""

    url: str
    bearer_token_env: EnvVarName | None = None
    basic_auth_user_env: EnvVarName | None = None
    basic_auth_password_env: EnvVarName | None = None
    verify_tls: bool = True
    ca_bundle: ConfigPath | None = None
    step_seconds: PositiveInt = DEFAULT_STEP_SECONDS
    scrape_interval_seconds: PositiveInt = 30
    timeout_seconds: PositiveFloat = 60.0
    max_retries: NonNegativeInt = 5
    selector: str = ""  # extra label matchers in braces, '{job="dcgm-exporter"}'
    # The exporter's metric name -> the site's, where a site renamed them (keys checked by ClusterConfig).
    metric_names: dict[str, str] = Field(default_factory=dict)
    # Request sizing (Prometheus defaults: 11,000 points per series per query_range,
    # --query.max-samples 50,000,000 per query) and concurrency.
    max_points_per_series: PositiveInt = 11_000
    max_samples_per_query: PositiveInt = 50_000_000
    # None: 4, or fewer against a server on this machine (as many as the reader's CPUs):
    # sources/prometheus/concurrency.py
    max_parallel_requests: PositiveInt | None = None
    # None reads every raw sample (exact). N asks the server for avg_over_time / max_over_time
    # over N-second steps instead: far less data for very large sites, some accuracy lost
    # (docs/prometheus.md states how much, measured on the real H200 trace).
    downsample_seconds: PositiveInt | None = None

    @field_validator("url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        if (problem := url_problem(value)) is not None:
            raise ValueError(problem)
        return value

    @field_validator("selector")
    @classmethod
    def _braced(cls, value: str) -> str:
        stripped = value.strip()
        if stripped and not (stripped.startswith("{") and stripped.endswith("}")):
            example = '{job="dcgm-exporter"}'
            raise ValueError(f"must be empty or label matchers in braces, e.g. {example!r} (got {value!r})")
        return stripped

    @model_validator(mode="after")
    def _consistent(self) -> PrometheusConfig:
        problems: list[tuple[Loc, str]] = []
        for field, metric in self.metric_names.items():
            if not _METRIC_NAME.match(metric):
                problems.append((("metric_names", field), f"{metric!r} is not a valid Prometheus metric name"))
        if (self.basic_auth_user_env is None) != (self.basic_auth_password_env is None):
            missing = "basic_auth_password_env" if self.basic_auth_password_env is None else "basic_auth_user_env"
            problems.append(((missing,), "required key is missing: basic auth needs both the user and the password"))
        if self.bearer_token_env is not None and self.basic_auth_user_env is not None:
            problems.append((("bearer_token_env",), "set either bearer_token_env or basic_auth_*_env, not both"))
        raise_problems(problems)
        return self


class SlurmConfig(StrictModel):
    """How to read Slurm accounting: run sacct (command mode) or read its saved output (file mode)."""

    sacct_command: Text | None = None
    sacct_file: ConfigPath | None = None
    # `sacct -M` name; ClusterConfig fills in the cluster's own name when omitted.
    slurm_cluster: Text | None = None
    # Command mode: what sacct prints. "json" needs Slurm 21.08+; saved files are told apart by content.
    sacct_output: Literal["parsable2", "json"] = "parsable2"
    # The day's ingest fails when more than this share of sacct rows is quarantined (the source is
    # then misconfigured); below it, bad rows are quarantined with a reason and the day lands.
    # Higher than the DCGM default: a small cluster's day has few rows, and one bad job is 1-2% of it.
    max_quarantine_share: float = Field(default=0.05, ge=0.0, le=1.0)
    # Late accounting: each day's ingest reads this many earlier days again and lands those whose
    # records changed (a job that ended after its first day landed; slurmdbd behind the controller).
    lookback_days: NonNegativeInt = 2
    # Downtime (docs/slurm.md, "Downtime: node events and reservations"): command mode runs
    # `sacctmgr show event` and `sacctmgr show reservation` for each day; file mode reads their
    # saved `--parsable2` outputs (with the header line). None of the three: no downtime is read.
    sacctmgr_command: Text | None = None
    events_file: ConfigPath | None = None
    reservations_file: ConfigPath | None = None
    # Node records (docs/slurm.md, "Node records"): command mode runs `scontrol show node --oneliner`
    # when a day lands; file mode reads its saved output, as read at `nodes_read_at` (UTC), else at
    # the file's modification time. Neither: the cluster's GPUs come from DCGM and the config alone.
    scontrol_command: Text | None = None
    nodes_file: ConfigPath | None = None
    nodes_read_at: datetime | None = None

    @model_validator(mode="after")
    def _one_mode(self) -> SlurmConfig:
        if (self.sacct_command is None) == (self.sacct_file is None):
            state = "neither is set" if self.sacct_command is None else "both are set"
            raise ValueError(f"set exactly one of sacct_command (command mode) or sacct_file (file mode); {state}")
        if self.sacctmgr_command is not None and (self.events_file or self.reservations_file) is not None:
            raise ValueError(
                "set either sacctmgr_command (command mode) or events_file / reservations_file (file mode), not both"
            )
        if self.scontrol_command is not None and self.nodes_file is not None:
            raise_problems([(("nodes_file",), "set either scontrol_command (command mode) or nodes_file, not both")])
        if self.nodes_read_at is not None and self.nodes_file is None:
            raise_problems([(("nodes_read_at",), "only with nodes_file: the time its saved output was taken (UTC)")])
        if self.nodes_read_at is not None and self.nodes_read_at.tzinfo is not None:
            raise_problems([(("nodes_read_at",), "give a UTC time without an offset (2026-12-01T00:00:00)")])
        return self

    @property
    def reads_nodes(self) -> bool:
        """Whether the cluster lands node records (the ``slurm_nodes`` source)."""
        return self.scontrol_command is not None or self.nodes_file is not None

    @property
    def reads_downtime(self) -> bool:
        """Whether the cluster lands node events and reservations (the ``slurm_downtime`` source)."""
        return self.sacctmgr_command is not None or self.events_file is not None or self.reservations_file is not None


class ClusterConfig(StrictModel):
    """One cluster: its name (carried by every warehouse table), sources and hardware."""

    name: Slug
    metrics: MetricsConfig
    prometheus: PrometheusConfig | None = None
    slurm: SlurmConfig | None = None
    kubernetes: KubernetesConfig | None = None  # GPU pods from kube-state-metrics (docs/kubernetes.md)
    inventory: InventoryConfig

    @model_validator(mode="before")
    @classmethod
    def _default_slurm_cluster(cls, data: Any) -> Any:
        if isinstance(data, dict) and isinstance(data.get("name"), str):
            slurm = data.get("slurm")
            if isinstance(slurm, dict) and "slurm_cluster" not in slurm:
                return {**data, "slurm": {**slurm, "slurm_cluster": data["name"]}}
        return data

    @model_validator(mode="after")
    def _metric_names_of_exporter(self) -> ClusterConfig:
        renamed = self.prometheus.metric_names if self.prometheus is not None else {}
        exporter = EXPORTERS[self.metrics.exporter]
        known = exporter.metric_signals
        problems: list[tuple[Loc, str]] = [
            (
                ("prometheus", "metric_names", name),
                f"not a metric of {exporter.title} (metrics.exporter = {exporter.name!r})" + did_you_mean(name, known),
            )
            for name in renamed
            if name not in known
        ]
        names = [renamed.get(metric, metric) for metric in known]
        problems += [
            (("prometheus", "metric_names"), f"two metrics would both be read as {name!r}")
            for name in sorted({name for name in names if names.count(name) > 1})
        ]
        raise_problems(problems)
        return self

    @model_validator(mode="after")
    def _prometheus_when_used(self) -> ClusterConfig:
        if self.metrics.source == "prometheus" and self.prometheus is None:
            raise_problems([(("prometheus",), "required key is missing: metrics.source is 'prometheus'")])
        if self.kubernetes is not None and self.kubernetes.path is None and self.prometheus is None:
            raise_problems(
                [
                    (
                        ("kubernetes", "path"),
                        "required key is missing: no [clusters.prometheus] to read kube-state-metrics from",
                    )
                ]
            )
        return self

    @property
    def sources(self) -> tuple[str, ...]:
        """The sources this cluster lands a day from (contracts/sources.py), from its sections:
        ``dcgm`` always, ``sacct`` with ``[clusters.slurm]``, ``kube`` with ``[clusters.kubernetes]``,
        ``slurm_downtime`` with a ``[clusters.slurm]`` that reads node events and reservations,
        ``slurm_nodes`` with one that reads node records (``scontrol_command`` / ``nodes_file``).
        The one answer to "which sources does a cluster have": the daily assets read exactly
        these, and the month's gate, the review sensor, ``cardhours run``, ``close`` and the
        freshness alert expect a landing of each."""
        slurm = (SACCT,) if self.slurm is not None else ()
        downtime = (SLURM_DOWNTIME,) if self.slurm is not None and self.slurm.reads_downtime else ()
        nodes = (SLURM_NODES,) if self.slurm is not None and self.slurm.reads_nodes else ()
        return (DCGM, *slurm, *((KUBE,) if self.kubernetes is not None else ()), *downtime, *nodes)

    @property
    def sample_step_seconds(self) -> int:
        """Expected spacing of DCGM samples (for coverage): metrics.step_seconds when set, else
        prometheus.step_seconds when the cluster has a [clusters.prometheus] section, else
        DEFAULT_STEP_SECONDS."""
        if self.metrics.step_seconds is not None:
            return self.metrics.step_seconds
        return self.prometheus.step_seconds if self.prometheus is not None else DEFAULT_STEP_SECONDS

    def hostnames(self) -> list[str]:
        """Every host of every node group, in configuration order."""
        return [host for group in self.inventory.node_groups for host in group.hostnames()]
