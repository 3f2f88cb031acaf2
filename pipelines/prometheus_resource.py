"""Dagster resource over a Prometheus-compatible API serving dcgm-exporter series.

Fields mirror ``cardhours.config.cluster.PrometheusConfig`` (validated again through it
when the source is built); credentials stay in environment variables named here and are
read when the source is built, never at import or definition time.
"""

from __future__ import annotations

from dagster import ConfigurableResource
from pydantic import Field

from cardhours.config.cluster import PrometheusConfig
from cardhours.sources.prometheus.source import PrometheusMetricsSource


def _default(name: str) -> object:
    return PrometheusConfig.model_fields[name].default


class PrometheusResource(ConfigurableResource):
    """Where and how to read DCGM samples over HTTP; ``source()`` gives the MetricsSource."""

    url: str
    bearer_token_env: str | None = None
    basic_auth_user_env: str | None = None
    basic_auth_password_env: str | None = None
    verify_tls: bool = _default("verify_tls")
    ca_bundle: str | None = None
    step_seconds: int = _default("step_seconds")
    scrape_interval_seconds: int = _default("scrape_interval_seconds")
    timeout_seconds: float = _default("timeout_seconds")
    max_retries: int = _default("max_retries")
    selector: str = ""
    metric_names: dict[str, str] = Field(default_factory=dict)
    max_points_per_series: int = _default("max_points_per_series")
    max_samples_per_query: int = _default("max_samples_per_query")
    max_parallel_requests: int | None = None  # unset: cardhours/sources/prometheus/concurrency.py
    downsample_seconds: int | None = None

    @classmethod
    def from_config(cls, config: PrometheusConfig) -> PrometheusResource:
        values = config.model_dump()
        if values.get("ca_bundle") is not None:
            values["ca_bundle"] = str(values["ca_bundle"])
        return cls(**values)

    def to_config(self) -> PrometheusConfig:
        """The validated config these fields describe (raises on bad values)."""
        fields = {name: getattr(self, name) for name in PrometheusConfig.model_fields}
        return PrometheusConfig.model_validate(fields, strict=False)

    def source(self) -> PrometheusMetricsSource:
        return PrometheusMetricsSource.from_config(self.to_config())
