"""fct_job_flags: each review rule fires at its threshold and not just past it (crafted frames)."""

from __future__ import annotations

from datetime import date, datetime, timedelta

import polars as pl
import pytest

from cardhours.config.policy import FlagsConfig
from transforms.fct_job_flags import SCHEMA, fct_job_flags
from transforms.fct_job_usage import SCHEMA as USAGE_SCHEMA
from transforms.flag_rules import Thresholds
from transforms.int_job_activity_profiled import SCHEMA as PROFILE_SCHEMA

MONTH = date(2024, 3, 1)
PERIOD_END = datetime(2024, 4, 1)
H100_MIB = 81559  # "NVIDIA H100 80GB HBM3" as nvidia-smi reports it
START = datetime(2024, 3, 10, 8)
INVENTORY = pl.DataFrame(
    [("c1", f"n{h}", g, None, H100_MIB) for h in (1, 2, 3, 4) for g in range(8)]
    + [("c1", "h200", 0, None, 143771), ("c1", "a40", 0, None, 40960)]
    + [("c1", "m1", 0, "3g.40gb", 40960), ("c1", "m1", 0, "4g.40gb", 40960)],
    schema={"cluster": pl.String, "hostname": pl.String, "gpu": pl.Int16, "gpu_i_profile": pl.String,
            "memory_mib": pl.Int64},
    orient="row",
)
PRICES = {"H100": 2.0, "A100": 1.0}


def usage_row(job_id: str = "1", hours: float = 2.0, util: float | None = 0.6, **fields) -> dict:
    """A fct_job_usage run: 1 H100 on n1 for ``hours`` h with sm_active mean ``util``, GPU_UTIL
    and GR_ENGINE equal to it, 8 GiB of memory; derived hours follow the fields given."""
    gpus = fields.get("gpus", 1.0)
    gpu_hours = gpus * hours
    row = {c: None for c in USAGE_SCHEMA} | {
        "cluster": "c1", "scheduler": "slurm", "job_id": job_id, "job_id_raw": job_id, "job_name": "train",
        "user_name": "alice", "account": "physics", "department": "phys", "division": "sci",
        "partition_name": "gpu", "state": "COMPLETED", "start_time": START, "end_time": START + timedelta(hours=hours),
        "is_open": False, "gpus": gpus, "gpu_model": "H100", "hosts": "n1", "elapsed_seconds": int(hours * 3600),
        "gpu_hours": gpu_hours, "utilization": util, "utilization_signal": "sm_active" if util is not None else None,
        "mean_gpu_util": util, "mean_gr_engine_active": util, "mean_sm_active": util, "mean_tensor_active": 0.0,
        "peak_fb_used_mib": 8192.0, "mean_fb_used_mib": 8000.0, "n_samples": 100 if util is not None else 0,
        "month": MONTH,
    }
    row |= fields
    if row["utilization"] is not None:
        row["active_gpu_hours"] = row["gpu_hours"] * row["utilization"]
        row["idle_gpu_hours"] = row["gpu_hours"] - row["active_gpu_hours"]
        row["zero_util_gpu_hours"] = row["gpu_hours"] if row["utilization"] <= 0.01 else 0.0
    return row


def profile_rows(rows: list[dict], **per_job: dict) -> pl.DataFrame:
    """One int_job_activity_profiled row per usage row: steady_share 1, no tail, unless overridden."""
    out = []
    for row in rows:
        extra = per_job.get(f"j{row['job_id_raw']}", {})
        out.append({"cluster": row["cluster"], "job_id_raw": row["job_id_raw"], "start_time": row["start_time"],
                    "measured_hours": 2, "steady_share": 1.0, "tail_zero_hours": 0.0} | extra)
    return pl.DataFrame(out, schema=PROFILE_SCHEMA)


def thresholds(**overrides) -> Thresholds:
    return Thresholds.from_mapping(FlagsConfig(**overrides).model_dump())


def flags(rows: list[dict], profiles: dict | None = None, **overrides) -> pl.DataFrame:
    usage = pl.DataFrame(rows, schema=USAGE_SCHEMA)
    profile = profile_rows(rows, **(profiles or {}))
    return fct_job_flags(usage, profile, INVENTORY, thresholds(**overrides), PRICES, "EUR", PERIOD_END, MONTH)


def reasons(rows: list[dict], job_id: str = "1", **kwargs) -> dict[str, str]:
    """reason -> severity of one job."""
    frame = flags(rows, **kwargs).filter(pl.col("job_id") == job_id)
    return dict(frame.select("reason", "severity").iter_rows())


def test_thresholds_name_a_missing_key() -> None:
    values = FlagsConfig().model_dump()
    del values["oversized_headroom"]
    with pytest.raises(KeyError, match="oversized_headroom"):
        Thresholds.from_mapping(values)


@pytest.mark.parametrize(("overrides", "key"), [
    ({"input_bound_min_activity": 0.5}, "input_bound_min_activity"),
    ({"oversized_headroom": 0.9}, "oversized_headroom"),
    ({"memory_efficiency_threshold": 0.0}, "memory_efficiency_threshold"),
])
def test_flags_config_rejects_bad_new_keys(overrides: dict, key: str) -> None:
    with pytest.raises(ValueError, match=key):
        FlagsConfig(**overrides)


def test_a_busy_dense_job_is_not_flagged() -> None:
    assert flags([usage_row(util=0.8, peak_fb_used_mib=70_000.0, mean_fb_used_mib=60_000.0)]).height == 0


def test_schema_and_order() -> None:
    out = flags([usage_row("2", util=0.1), usage_row("1", util=0.0)])
    assert out.schema == pl.Schema(SCHEMA)
    assert out.select("job_id", "reason").rows() == [
        ("1", "ZERO_UTIL"), ("2", "LOW_UTIL"), ("2", "INPUT_BOUND"), ("2", "OVERSIZED"),
    ]


# --- ZERO_UTIL / LOW_UTIL -------------------------------------------------------------


@pytest.mark.parametrize(("util", "expected"), [(0.0, "high"), (0.01, "high"), (0.0101, None)])
def test_zero_util_at_its_threshold(util: float, expected: str | None) -> None:
    assert reasons([usage_row(util=util, mean_gpu_util=0.0)]).get("ZERO_UTIL") == expected


def test_zero_util_not_when_the_engine_looks_busy_nor_without_samples() -> None:
    assert "ZERO_UTIL" not in reasons([usage_row(util=0.0, mean_gpu_util=0.5, mean_sm_active=0.0)])
    assert reasons([usage_row(util=None)]) == {}


@pytest.mark.parametrize(("util", "expected"), [
    (0.02, "high"), (0.1499, "high"), (0.15, "medium"), (0.2499, "medium"), (0.25, None), (0.005, None),
])
def test_low_util_bands(util: float, expected: str | None) -> None:
    assert reasons([usage_row(util=util)]).get("LOW_UTIL") == expected


@pytest.mark.parametrize(("minutes", "flagged"), [(29.9, False), (30.0, True)])
def test_minimum_runtime(minutes: float, flagged: bool) -> None:
    got = reasons([usage_row(hours=minutes / 60, util=0.1)])
    assert ("LOW_UTIL" in got) is flagged
    assert reasons([usage_row(hours=minutes / 60, util=0.1)], min_runtime_minutes=0).get("LOW_UTIL") == "high"


@pytest.mark.parametrize(("efficiency", "exempt", "flagged"), [
    (0.80, True, False), (0.7999, True, True), (0.80, False, True),
])
def test_memory_bound_exemption(efficiency: float, exempt: bool, flagged: bool) -> None:
    row = usage_row(util=0.1, peak_fb_used_mib=efficiency * H100_MIB)
    got = reasons([row], low_util_exempt_memory_bound=exempt)
    assert ("LOW_UTIL" in got) is flagged


# --- MEMORY_HELD_IDLE / BUSY_ENGINE_IDLE_SMS / INPUT_BOUND ----------------------------


@pytest.mark.parametrize(("held", "util", "flagged"), [
    (0.1001, 0.05, True), (0.10, 0.0, False), (0.5, 0.0501, False),
])
def test_memory_held_idle(held: float, util: float, flagged: bool) -> None:
    row = usage_row(util=util, mean_fb_used_mib=held * H100_MIB, peak_fb_used_mib=held * H100_MIB)
    got = reasons([row])
    assert (got.get("MEMORY_HELD_IDLE") == "high") is flagged
    assert ("MEMORY_HELD_IDLE" in got) is flagged


@pytest.mark.parametrize(("gpu_util", "gr", "sm", "flagged"), [
    (0.5, 0.5, 0.0499, True), (0.4999, 0.4999, 0.01, False), (None, 0.5, 0.01, True),
    (0.9, None, 0.01, True), (0.9, 0.9, 0.05, False), (0.9, 0.9, None, False),
])
def test_busy_engine_idle_sms(gpu_util, gr, sm, flagged: bool) -> None:
    row = usage_row(util=sm if sm is not None else gr, mean_gpu_util=gpu_util, mean_gr_engine_active=gr,
                    mean_sm_active=sm)
    got = reasons([row])
    assert (got.get("BUSY_ENGINE_IDLE_SMS") == "medium") is flagged


def test_busy_engine_detail_has_the_evidence() -> None:
    row = usage_row(util=0.006, mean_gpu_util=0.8, mean_gr_engine_active=0.8, mean_sm_active=0.006)
    detail = flags([row]).filter(pl.col("reason") == "BUSY_ENGINE_IDLE_SMS").get_column("detail")[0]
    assert detail == "SM active 0.6% while GPU_UTIL reads 80.0% and GR_ENGINE_ACTIVE 80.0%"


@pytest.mark.parametrize(("gr", "sm", "steady", "flagged"), [
    (0.12, 0.10, 1.0, True),     # bursts of wide kernels, steady
    (0.02, 0.01, 1.0, True),     # lowest engine activity in the band
    (0.0199, 0.015, 1.0, False),
    (0.4999, 0.45, 1.0, True),
    (0.50, 0.45, 1.0, False),    # busy half the time or more: not a duty-cycle problem
    (0.12, 0.06, 1.0, True),     # SM/GR = 0.5
    (0.12, 0.0599, 1.0, False),  # narrow kernels: steadily low, not starved
    (0.12, 0.10, 0.75, True),
    (0.12, 0.10, 0.7499, False),  # phases, not a steady duty cycle
    (0.12, 0.10, None, False),
])
def test_input_bound(gr: float, sm: float, steady, flagged: bool) -> None:
    row = usage_row(util=sm, mean_gpu_util=gr, mean_gr_engine_active=gr, mean_sm_active=sm)
    got = reasons([row], profiles={"j1": {"steady_share": steady}})
    assert (got.get("INPUT_BOUND") == "medium") is flagged


# --- OVERSIZED / MULTINODE_FRAGMENTED -------------------------------------------------


@pytest.mark.parametrize(("host", "util", "peak_gib", "profile"), [
    ("n1", 0.10, 8.0, "1g.10gb"),    # 8 GiB x 1.2 = 9.6 <= 10.0 GiB
    ("n1", 0.10, 8.6, "2g.20gb"),    # 10.3 GiB: over 1g
    ("n1", 0.12, 4.0, "2g.20gb"),    # 0.12 x 1.2 = 0.144 > 1/7 of the compute
    ("n1", 0.24, 30.0, "3g.40gb"),
    ("n1", 0.24, 34.0, None),        # 40.8 GiB: not even half the card
    ("n1", 0.25, 1.0, None),         # not below oversized_max_utilization
    ("h200", 0.05, 1.0, "1g.18gb"),  # the names scale with the card
    ("h200", 0.05, 50.0, "3g.71gb"),
    ("a40", 0.05, 1.0, "1g.5gb"),
    ("a40", 0.05, 6.0, "2g.10gb"),
])
def test_oversized_names_the_smallest_fitting_profile(host: str, util: float, peak_gib: float, profile) -> None:
    row = usage_row(util=util, hosts=host, peak_fb_used_mib=peak_gib * 1024, mean_fb_used_mib=peak_gib * 512)
    out = flags([row]).filter(pl.col("reason") == "OVERSIZED")
    if profile is None:
        assert out.height == 0
    else:
        assert out.get_column("recommendation")[0] == f"Would fit a MIG slice: request {profile} instead of a whole GPU."
        assert out.get_column("severity")[0] == "low"


def test_oversized_not_for_idle_jobs() -> None:
    assert "OVERSIZED" not in reasons([usage_row(util=0.01, mean_gpu_util=0.0)])  # ZERO_UTIL: end it
    assert "OVERSIZED" in reasons([usage_row(util=0.0101, mean_gpu_util=0.0)])


def test_oversized_only_for_single_whole_gpus() -> None:
    two = usage_row(util=0.05, gpus=2.0, gpu_hours=4.0)
    mig = usage_row("2", util=0.05, hosts="m1", gpu_model="A100 3g.40gb", gpus=3 / 7)
    out = flags([two, mig])
    assert "OVERSIZED" not in out.get_column("reason").to_list()


def test_oversized_wastes_what_the_slice_leaves() -> None:
    out = flags([usage_row(hours=7.0, util=0.05)]).filter(pl.col("reason") == "OVERSIZED")
    assert out.get_column("wasted_gpu_hours")[0] == pytest.approx(7.0 * 6 / 7)


@pytest.mark.parametrize(("gpus", "hosts", "flagged"), [
    (4.0, "n1,n2,n3,n4", True), (8.0, "n1", False), (16.0, "n1,n2", False), (16.0, "n1,n2,n3", True),
    (2.0, "n1,n2", True),
])
def test_multinode_fragmented(gpus: float, hosts: str, flagged: bool) -> None:
    got = reasons([usage_row(util=0.8, gpus=gpus, hosts=hosts)])
    assert (got.get("MULTINODE_FRAGMENTED") == "low") is flagged


def test_multinode_detail() -> None:
    out = flags([usage_row(util=0.8, gpus=4.0, hosts="n1,n2,n3,n4")])
    assert out.get_column("detail")[0] == "4 GPUs spread over 4 hosts; 1 host(s) of 8 GPUs would hold them"


# --- IDLE_TAIL / DEBUG_OVER_LIMIT -----------------------------------------------------


@pytest.mark.parametrize(("tail", "flagged"), [(2.0, True), (1.99, False), (None, False)])
def test_idle_tail(tail, flagged: bool) -> None:
    row = usage_row(hours=6.0, util=0.5, gpus=2.0)
    out = flags([row], profiles={"j1": {"tail_zero_hours": tail}}).filter(pl.col("reason") == "IDLE_TAIL")
    assert (out.height == 1) is flagged
    if flagged:
        assert out.get_column("wasted_gpu_hours")[0] == pytest.approx(4.0)
        assert out.get_column("severity")[0] == "medium"


def test_idle_tail_left_to_zero_util() -> None:
    row = usage_row(hours=6.0, util=0.0)
    assert "IDLE_TAIL" not in reasons([row], profiles={"j1": {"tail_zero_hours": 6.0}})


@pytest.mark.parametrize(("tail", "flagged"), [(6.0, False), (5.99, True)])
def test_idle_tail_needs_work_before_it(tail: float, flagged: bool) -> None:
    """A run "zero" from start to end is not a tail (e.g. started last month: this month's ZERO_UTIL)."""
    row = usage_row(hours=6.0, util=0.3, mean_gr_engine_active=0.9)
    assert ("IDLE_TAIL" in reasons([row], profiles={"j1": {"tail_zero_hours": tail}})) is flagged


def test_idle_tail_not_for_busy_engine_idle_sms_runs() -> None:
    """Their hours count as zero by SM_ACTIVE while the engine spins: not an idle tail."""
    row = usage_row(hours=6.0, util=0.006, mean_gpu_util=0.9, mean_gr_engine_active=0.9)
    got = reasons([row], profiles={"j1": {"tail_zero_hours": 3.0}})
    assert "BUSY_ENGINE_IDLE_SMS" in got and "IDLE_TAIL" not in got


@pytest.mark.parametrize(("hours", "flagged"), [(24.0, False), (24.01, True)])
def test_debug_over_time_limit(hours: float, flagged: bool) -> None:
    got = reasons([usage_row(hours=hours, util=0.8, partition_name="debug")])
    assert ("DEBUG_OVER_LIMIT" in got) is flagged
    assert "DEBUG_OVER_LIMIT" not in reasons([usage_row(hours=hours, util=0.8)])


def debug_jobs(starts_h: list[float], hours: float = 1.0, user: str = "alice") -> list[dict]:
    return [usage_row(str(i + 1), hours=hours, util=0.8, partition_name="debug", user_name=user,
                      start_time=START + timedelta(hours=s), end_time=START + timedelta(hours=s + hours))
            for i, s in enumerate(starts_h)]


def test_debug_concurrency_limit() -> None:
    at_once = flags(debug_jobs([0.0, 0.5, 0.9]))  # 3 running at 0.9 h, limit 2
    assert sorted(at_once.filter(pl.col("reason") == "DEBUG_OVER_LIMIT").get_column("job_id")) == ["1", "2", "3"]
    assert "alice had 3 debug jobs running at once (limit 2)" in at_once.get_column("detail")[0]
    assert flags(debug_jobs([0.0, 0.5])).height == 0
    assert flags(debug_jobs([0.0, 1.0, 2.0])).height == 0  # one after another (end == next start)
    assert flags(debug_jobs([0.0, 0.5, 0.9]), debug_max_concurrent_jobs=3).height == 0
    other_users = debug_jobs([0.0]) + [r | {"job_id": "9", "job_id_raw": "9", "user_name": "bob"}
                                       for r in debug_jobs([0.5, 0.9])]
    assert flags(other_users).height == 0


def test_debug_wasted_hours_past_the_limit() -> None:
    out = flags([usage_row(hours=30.0, util=0.8, gpus=2.0, partition_name="debug")])
    assert out.get_column("wasted_gpu_hours")[0] == pytest.approx(12.0)
    assert out.get_column("detail")[0] == "ran 30.0 h in partition debug (limit 24.0 h)"


# --- cost ---------------------------------------------------------------------------


def test_idle_cost_uses_the_base_model_rate() -> None:
    whole = usage_row(util=0.1, hours=10.0)
    mig = usage_row("2", util=0.1, hours=10.0, hosts="m1", gpu_model="A100 3g.40gb", gpus=3 / 7)
    unpriced = usage_row("3", util=0.1, hours=10.0, gpu_model="L40S")
    out = flags([whole, mig, unpriced]).filter(pl.col("reason") == "LOW_UTIL")
    cost = dict(out.select("job_id", "idle_cost").iter_rows())
    assert cost["1"] == pytest.approx(9.0 * 2.0)
    assert cost["2"] == pytest.approx(10.0 * 3 / 7 * 0.9 * 1.0)
    assert cost["3"] is None
    assert set(out.get_column("currency")) == {"EUR"}
