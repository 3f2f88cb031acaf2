"""DCGM samples of the Kubernetes pool: the pods' GPU allocations, and their workload labels.

The samples come from the same generator as the Slurm nodes' (``samples.generate_day``,
shapes fitted to the real H200 trace), driven by one allocation per pod and GPU. The
generator's ``hpc_job`` marker is then replaced by what dcgm-exporter's pod-resources
lookup puts on a held GPU: ``pod``/``namespace``/``container``, or ``exported_*`` on the
nodes scraped with ``honor_labels: false`` (there the plain labels name the exporter's own
pod). Every series of the pool carries its scrape ``job``.

Two frames per day: ``raw`` in RAW_SAMPLE_SCHEMA as the reader normalizes it (the Parquet
metrics and the truth), and ``om`` with one ``lbl_<name>`` column per written label.
"""

from __future__ import annotations

import json

import polars as pl

from contracts.schemas import RAW_SAMPLE_SCHEMA
from simulate.kube.pool import EXPORTER_NAMESPACE, POOL, SCRAPE_JOB
from simulate.om_writer import LABELS, SERIES_ORDER

WORKLOAD = ("pod", "namespace", "container")
OM_LABELS: dict[str, str] = {
    **LABELS,
    "job": "lbl_job",
    **{name: f"lbl_{name}" for name in WORKLOAD},
    **{f"exported_{name}": f"lbl_exported_{name}" for name in WORKLOAD},
}
OM_SERIES_ORDER = [*SERIES_ORDER[:-1], "lbl_pod", "lbl_exported_pod", SERIES_ORDER[-1]]
OM_EXTRA = [column for column in OM_LABELS.values() if column.startswith("lbl_")]
EXPORTER_CONTAINER = "nvidia-dcgm-exporter"


def host_frame() -> pl.DataFrame:
    """Per pool host: scrape style, job label, the exporter's own pod labels, and the
    ``extra_labels`` JSON the reader's normalization gives its series."""
    rows = []
    for host, *_, style in POOL:
        job = SCRAPE_JOB[style]
        extra = {"job": job}
        if style == "exported":
            extra |= {"pod": f"dcgm-exporter-{host}", "namespace": EXPORTER_NAMESPACE, "container": EXPORTER_CONTAINER}
        rows.append((host, style == "exported", job, json.dumps(extra, sort_keys=True, separators=(",", ":"))))
    return pl.DataFrame(
        rows,
        schema={"hostname": pl.String, "renamed": pl.Boolean, "lbl_job": pl.String, "extra_labels": pl.String},
        orient="row",
    )


def label_samples(samples: pl.DataFrame, pods: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """``samples`` (RAW_SAMPLE_SCHEMA, hpc_job = a pod's marker) -> (raw, om) frames.

    ``pods``: ``marker, pod, namespace, container`` (one row per pod)."""
    hosts = host_frame()
    joined = (
        samples.drop("pod", "namespace", "container", "extra_labels")
        .join(pods.rename({"marker": "hpc_job"}), on="hpc_job", how="left", maintain_order="left")
        .join(hosts, on="hostname", how="left", maintain_order="left")
    )
    unknown = joined.filter(pl.col("hpc_job").is_not_null() & pl.col("pod").is_null())
    if unknown.height or joined["lbl_job"].null_count():
        raise ValueError("samples on hosts outside the Kubernetes pool or of unknown pods")
    joined = joined.with_columns(pl.lit(None, pl.String).alias("hpc_job"))
    raw = joined.select(list(RAW_SAMPLE_SCHEMA))
    renamed = pl.col("renamed")
    exporter = {
        "pod": pl.concat_str(pl.lit("dcgm-exporter-"), "hostname"),
        "namespace": pl.lit(EXPORTER_NAMESPACE),
        "container": pl.lit(EXPORTER_CONTAINER),
    }
    om = joined.with_columns(
        *[pl.when(renamed).then(exporter[n]).otherwise(pl.col(n)).alias(f"lbl_{n}") for n in WORKLOAD],
        *[pl.when(renamed).then(pl.col(n)).alias(f"lbl_exported_{n}") for n in WORKLOAD],
    ).select(*RAW_SAMPLE_SCHEMA, *OM_EXTRA)
    return raw, om


def with_om_columns(samples: pl.DataFrame) -> pl.DataFrame:
    """Slurm-node samples with the (null) label columns of the om frame."""
    return samples.with_columns(pl.lit(None, pl.String).alias(c) for c in OM_EXTRA)
