"""fct_job_usage, Kubernetes rows: staged Kubernetes jobs beside the Slurm runs (scheduler
'kubernetes'), GPU-hours from the pods clipped to the month, the time-sliced split, queue time,
department and division, MIG model labels."""

from __future__ import annotations

from datetime import datetime, timedelta

import polars as pl
import pytest

from transforms.intermediate.int_gpu_minutes_attributed import SCHEMA as ATTRIBUTED_SCHEMA
from transforms.marts.fct_job_usage import SCHEMA, fct_job_usage
from transforms.staging.stg_kube__jobs import stg_kube__jobs
from transforms.staging.stg_kube__pods import SCHEMA as PODS_SCHEMA
from transforms.staging.stg_slurm__jobs import SCHEMA as JOBS_SCHEMA

MARCH = (datetime(2024, 3, 1), datetime(2024, 4, 1))
T0 = datetime(2024, 3, 10, 10)
ACCOUNTS = pl.DataFrame({"cluster": ["c1"], "account": ["phys"], "department": ["physics"], "division": ["science"]})
DIVISIONS = pl.DataFrame({"department": ["nlp", "physics"], "division": ["research", "science"]})
GPU_MODELS = pl.DataFrame(
    {"cluster": ["c1", "c1", "c1"], "hostname": ["k1", "k2", "n1"], "gpu_model": ["H100", "A100", "H100"]}
)


def pod(name: str, start: datetime | None, end: datetime | None, **fields) -> dict:
    row = {c: None for c in PODS_SCHEMA} | {
        "cluster": "c1",
        "namespace": "ml",
        "pod": name,
        "pod_uid": f"uid-{name}",
        "node": "k1",
        "phase": "Succeeded",
        "created_time": (start or T0) - timedelta(minutes=5),
        "scheduled_time": (start or T0) - timedelta(minutes=1),
        "start_time": start,
        "end_time": end,
        "is_open": end is None and start is not None,
        "gpus": 1.0,
        "gpu_slots": 1,
        "gpu_type": "nvidia_com_gpu",
        "is_mig": False,
        "department": "nlp",
        "department_source": "pod_label",
    }
    return row | fields


def slurm_run(job_id_raw: str, start: datetime, end: datetime) -> dict:
    return {c: None for c in JOBS_SCHEMA} | {
        "cluster": "c1",
        "scheduler": "slurm",
        "job_id": job_id_raw,
        "job_id_raw": job_id_raw,
        "account": "phys",
        "submit_time": start - timedelta(minutes=10),
        "eligible_time": start - timedelta(minutes=10),
        "start_time": start,
        "end_time": end,
        "gpus": 2.0,
        "gpu_slots": 2,
        "is_mig": False,
        "n_nodes": 1,
        "hosts": ["n1"],
    }


def attributed(job_id_raw: str, start: datetime, method: str, samples: float, split_off: float = 0.0) -> dict:
    return {c: (0.0 if c.endswith(("_n", "_sum")) else None) for c in ATTRIBUTED_SCHEMA} | {
        "cluster": "c1",
        "hostname": "k1",
        "gpu": 0,
        "hour": T0,
        "job_id_raw": job_id_raw,
        "start_time": start,
        "attribution_method": method,
        "samples": samples,
        "best_sum": 0.5 * samples,
        "best_n": samples,
        "sm_active_sum": 0.5 * samples,
        "sm_active_n": samples,
        "zero_samples": 0.0,
        "split_off_samples": split_off,
    }


def usage(pods: list[dict], rows: list[dict] = (), runs: list[dict] = ()) -> pl.DataFrame:
    staged = pl.DataFrame(pods, schema=PODS_SCHEMA)
    return fct_job_usage(
        jobs=pl.DataFrame(list(runs), schema=JOBS_SCHEMA),
        attributed=pl.DataFrame(list(rows), schema=ATTRIBUTED_SCHEMA),
        accounts=ACCOUNTS,
        gpu_models=GPU_MODELS,
        period_start=MARCH[0],
        period_end=MARCH[1],
        step_seconds=30,
        kube_jobs=stg_kube__jobs(staged),
        kube_pods=staged,
        divisions=DIVISIONS,
    )


def test_a_gang_is_one_job_with_its_pods_gpu_time_clipped_to_the_month() -> None:
    late = datetime(2024, 3, 31, 23)
    pods = [
        pod(
            "train-w0",
            T0,
            T0 + timedelta(hours=2),
            owner_kind="PyTorchJob",
            owner_name="train",
            gpus=4.0,
            gpu_slots=4,
            queue_name="research",
        ),
        pod(
            "train-w1",
            T0 + timedelta(hours=1),
            T0 + timedelta(hours=2),
            owner_kind="PyTorchJob",
            owner_name="train",
            gpus=4.0,
            gpu_slots=4,
            scheduled_time=T0 + timedelta(minutes=50),
        ),
        pod("late", late, late + timedelta(hours=3), gpus=2.0, gpu_slots=2),
    ]
    out = usage(pods).sort("job_id")
    assert out.schema == pl.Schema(SCHEMA) and out["scheduler"].to_list() == ["kubernetes"] * 2
    gang = out.row(0, named=True)
    assert gang["job_id"] == gang["job_id_raw"] == "ml/PyTorchJob/train"
    assert (gang["account"], gang["partition_name"], gang["user_name"]) == ("ml", "research", None)
    assert gang["gpu_hours"] == pytest.approx(4 * 2 + 4 * 1)  # not 8 GPUs x the 2 h span
    assert gang["elapsed_seconds"] == 7200 and gang["gpus"] == 8.0
    assert gang["queue_seconds"] == 55 * 60  # first created (T0 - 5 min) -> last scheduled (T0 + 50 min)
    assert gang["expected_samples"] == pytest.approx((4 * 7200 + 4 * 3600) / 30)
    assert gang["gpu_model"] == "H100"
    late_row = out.row(1, named=True)
    assert late_row["gpu_hours"] == pytest.approx(2.0) and late_row["elapsed_seconds"] == 3600
    assert late_row["attribution_method"] == "none" and late_row["utilization"] is None


def test_time_sliced_samples_split_off_reduce_the_card_hours() -> None:
    pods = [pod("a", T0, T0 + timedelta(hours=1))]
    out = usage(pods, [attributed("ml/a", T0, "pod_shared", samples=40.0, split_off=80.0)]).row(0, named=True)
    assert out["gpu_hours"] == pytest.approx(1 / 3)  # held a third of the GPU's 120 samples
    assert out["attribution_method"] == "pod_shared" and out["utilization"] == pytest.approx(0.5)
    alone = usage(pods, [attributed("ml/a", T0, "pod_label", samples=120.0)]).row(0, named=True)
    assert alone["gpu_hours"] == pytest.approx(1.0) and alone["n_samples"] == 120


def test_department_and_division_from_the_staging_else_unmapped() -> None:
    pods = [
        pod("a", T0, T0 + timedelta(hours=1)),
        pod("b", T0, T0 + timedelta(hours=1), department="robotics"),
        pod("c", T0, T0 + timedelta(hours=1), department="unmapped", department_source="unmapped"),
    ]
    got = {r["job_id"]: (r["department"], r["division"]) for r in usage(pods).iter_rows(named=True)}
    assert got == {"ml/a": ("nlp", "research"), "ml/b": ("robotics", "unmapped"), "ml/c": ("unmapped", "unmapped")}


def test_mig_pods_count_their_fraction_and_name_the_profile() -> None:
    pods = [
        pod(
            "embed",
            T0,
            T0 + timedelta(hours=7),
            node="k2",
            gpus=1 / 7,
            gpu_type="nvidia_com_mig_1g_10gb",
            is_mig=True,
            mig_profile="1g.10gb",
        )
    ]
    row = usage(pods).row(0, named=True)
    assert row["gpu_model"] == "A100 1g.10gb" and row["gpu_hours"] == pytest.approx(1.0)


def test_slurm_rows_are_the_same_with_or_without_kubernetes_jobs() -> None:
    runs = [slurm_run("5", T0, T0 + timedelta(hours=3))]
    alone = fct_job_usage(
        pl.DataFrame(runs, schema=JOBS_SCHEMA),
        pl.DataFrame(schema=ATTRIBUTED_SCHEMA),
        ACCOUNTS,
        GPU_MODELS,
        *MARCH,
        step_seconds=30,
    )
    mixed = usage([pod("a", T0, T0 + timedelta(hours=1))], runs=runs)
    assert mixed["scheduler"].to_list() == ["slurm", "kubernetes"]
    assert mixed.head(1).equals(alone)
    assert mixed["gpu_hours"].to_list() == pytest.approx([6.0, 1.0]) and mixed["queue_seconds"].to_list() == [600, 240]


def test_kubernetes_jobs_need_their_pods() -> None:
    staged = pl.DataFrame([pod("a", T0, None)], schema=PODS_SCHEMA)
    with pytest.raises(ValueError, match="kube_pods"):
        fct_job_usage(
            pl.DataFrame(schema=JOBS_SCHEMA),
            pl.DataFrame(schema=ATTRIBUTED_SCHEMA),
            ACCOUNTS,
            GPU_MODELS,
            *MARCH,
            step_seconds=30,
            kube_jobs=stg_kube__jobs(staged),
        )
