"""fct_job_flags MULTINODE_FRAGMENTED: NVLink domains and switch groups, judged against the free
GPUs at the run's start (tests/unit/fct_job_flags_cases.py: n1-n4 are 8-GPU HGX hosts, each its
own NVLink domain, n1-n2 under leaf-1 and n3-n4 under leaf-2)."""

from __future__ import annotations

from datetime import timedelta

import polars as pl
import pytest

from contracts.capacity_states import DOWN, DOWNTIME_INTERVAL, PLANNED_DOWN, RESERVED
from tests.unit.fct_job_flags_cases import INVENTORY, START, flags, reasons, usage_row

CODE = "MULTINODE_FRAGMENTED"


def job(gpus: float, hosts: str, **fields) -> dict:
    return usage_row("1", util=0.8, gpus=gpus, hosts=hosts, **fields)


def other(job_id: str, gpus: float, hosts: str, start_h: float = -1.0, hours: float = 5.0, **fields) -> dict:
    """Another run of the month, holding ``gpus`` over ``hosts`` from START + ``start_h`` hours."""
    start = START + timedelta(hours=start_h)
    return usage_row(job_id, hours=hours, util=0.8, gpus=gpus, hosts=hosts, start_time=start, **fields) | {
        "end_time": start + timedelta(hours=hours)
    }


def fragmented(rows: list[dict], **kwargs) -> pl.DataFrame:
    return flags(rows, **kwargs).filter((pl.col("reason") == CODE) & (pl.col("job_id") == "1"))


@pytest.mark.parametrize(
    ("gpus", "hosts", "flagged"),
    [
        (4.0, "n1,n2,n3,n4", True),  # 4 domains where 1 had room
        (8.0, "n1", False),  # one host
        (16.0, "n1,n2", False),  # 2 domains needed, one switch group
        (16.0, "n1,n3", True),  # 2 domains, but over 2 switch groups where leaf-1 alone had 16 free
        (16.0, "n1,n2,n3", True),
        (2.0, "n1,n2", True),
        (4.0, "n1,nx", False),  # a host the inventory does not know: not judged
    ],
)
def test_judged_by_domains_and_switch_groups(gpus: float, hosts: str, flagged: bool) -> None:
    earlier = other("9", 4.0, "n1,n2,n3,n4", start_h=-48.0, hours=1.0)  # n1-n4 are in the partition
    assert (reasons([job(gpus, hosts), earlier]).get(CODE) == "low") is flagged


def test_detail_and_recommendation_name_the_domains_and_the_free_gpus() -> None:
    out = fragmented([job(4.0, "n1,n2,n3,n4"), other("2", 6.0, "n1")])
    assert out.get_column("detail")[0] == (
        "4 GPUs on 4 hosts in 4 NVLink domain(s) (n1, n2, n3, n4) under 2 switch group(s) (leaf-1, leaf-2); "
        "at its start 1 NVLink domain(s) had room for it (n2: 8 GPUs free; the freest, n2, had 8 free); "
        "switch group leaf-2 alone had 16 GPUs free"
    )
    assert out.get_column("recommendation")[0] == (
        "The scheduler could have placed it in 1 NVLink domain(s) under one switch group: ask for whole nodes "
        "(--nodes=1 --gpus-per-node=8) and one leaf switch (--switches=1) so the GPUs talk over NVLink instead "
        "of the network; if the job asked for that, the scheduler needs the site's topology (Slurm topology.conf) "
        "to pack it."
    )
    assert out.select("severity", "wasted_gpu_hours").row(0) == ("low", 0.0)


def test_not_flagged_when_no_tighter_placement_was_free_at_its_start() -> None:
    busy = [other("2", 6.0, "n1"), other("3", 6.0, "n2"), other("4", 8.0, "n3"), other("5", 8.0, "n4")]
    assert fragmented([job(4.0, "n1,n2"), *busy]).height == 0  # 2 + 2 free: both domains were needed
    # 16 GPUs over n1 and n3 while n2 and n4 were full: each switch group had only 8 free
    full = [other("2", 8.0, "n2"), other("3", 8.0, "n4")]
    assert fragmented([job(16.0, "n1,n3"), *full]).height == 0


@pytest.mark.parametrize(
    ("start_h", "hours", "flagged"),
    [
        (-1.0, 5.0, False),  # n3, n4 full at the start
        (-5.0, 5.0, True),  # ended exactly at the start: free
        (0.5, 5.0, True),  # started after it: free at the start
    ],
)
def test_only_runs_holding_gpus_at_the_start_count(start_h: float, hours: float, flagged: bool) -> None:
    busy = [other("2", 6.0, "n1"), other("3", 6.0, "n2")]
    later = [other("4", 16.0, "n3,n4", start_h=start_h, hours=hours)]
    assert (fragmented([job(4.0, "n1,n2"), *busy, *later]).height == 1) is flagged


def test_free_gpus_only_on_hosts_of_its_partition() -> None:
    busy = [other("2", 6.0, "n1"), other("3", 6.0, "n2")]
    elsewhere = other("4", 1.0, "n3", start_h=-48.0, hours=1.0, partition_name="big")
    assert fragmented([job(4.0, "n1,n2"), *busy, elsewhere]).height == 0  # n3 is not the partition's
    same = other("4", 1.0, "n3", start_h=-48.0, hours=1.0)
    out = fragmented([job(4.0, "n1,n2"), *busy, same])
    assert "the freest, n3, had 8 free" in out.get_column("detail")[0]


def test_without_a_partition_every_host_of_its_model_is_a_candidate() -> None:
    busy = [other("2", 6.0, "n1", partition_name=None), other("3", 6.0, "n2", partition_name=None)]
    assert fragmented([job(4.0, "n1,n2", partition_name=None), *busy]).height == 1


def _rack_scale() -> pl.DataFrame:
    """n1-n2 one NVLink domain (nvl72-a), n3-n4 another (nvl72-b), all under leaf-1."""
    return INVENTORY.with_columns(
        nvlink_domain=pl.when(pl.col("hostname").is_in(["n1", "n2"]))
        .then(pl.lit("nvl72-a"))
        .when(pl.col("hostname").is_in(["n3", "n4"]))
        .then(pl.lit("nvl72-b")),
        switch_group=pl.when(pl.col("hostname").str.starts_with("n")).then(pl.lit("leaf-1")),
    )


def test_a_domain_spanning_hosts_is_one_domain() -> None:
    assert fragmented([job(16.0, "n1,n2")], inventory=_rack_scale()).height == 0
    earlier = other("9", 4.0, "n1,n2,n3,n4", start_h=-48.0, hours=1.0)
    out = fragmented([job(8.0, "n2,n3"), earlier], inventory=_rack_scale())
    assert out.get_column("detail")[0].startswith(
        "8 GPUs on 2 hosts in 2 NVLink domain(s) (nvl72-a, nvl72-b) under 1 switch group(s) (leaf-1); "
        "at its start 1 NVLink domain(s) had room for it (nvl72-a: 16 GPUs free"
    )


def test_mig_runs_are_not_judged() -> None:
    assert CODE not in reasons([usage_row("1", util=0.8, gpus=6 / 7, gpu_model="A100 3g.40gb", hosts="m1,n1")])


def _out(state: str, *hosts: str, gpu: int | None = None) -> pl.DataFrame:
    """A downtime interval on each of ``hosts`` (all their GPUs, or ``gpu``) around the run's start."""
    span = {"start_ts": START - timedelta(hours=2), "end_ts": START + timedelta(hours=2), "source": "slurm_event"}
    rows = [
        {"cluster": "c1", "hostname": h, "gpu": gpu, "state": state, "reason": "t", "reported_by": ""} for h in hosts
    ]
    return pl.DataFrame([row | span for row in rows], schema=DOWNTIME_INTERVAL)


@pytest.mark.parametrize(
    ("downtime", "flagged"),
    [
        (None, True),  # leaf-1 (n1 + n2) and leaf-2 (n3 + n4) each had 16 GPUs free: one would have held it
        (_out(DOWN, "n2", "n4"), False),  # n2 and n4 drained: each switch group had only 8 free
        (_out(PLANNED_DOWN, "n2", "n4"), False),  # in maintenance
        (_out(DOWN, "n2", "n4", gpu=0), False),  # a GPU of each fell off the bus: 15 free per group
        (_out(RESERVED, "n2", "n4"), True),  # a reservation may be the run's own: counted free
        (_out(DOWN, "n4"), True),  # leaf-1 still had 16 free
    ],
)
def test_hosts_out_of_service_at_its_start_are_not_free(downtime: pl.DataFrame | None, flagged: bool) -> None:
    earlier = other("9", 4.0, "n1,n2,n3,n4", start_h=-48.0, hours=1.0)  # n1-n4 are in the partition
    assert (fragmented([job(16.0, "n1,n3"), earlier], downtime=downtime).height == 1) is flagged
