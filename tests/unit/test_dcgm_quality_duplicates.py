"""screen_samples: exporter-restart duplicates, which series is kept, and what is not a duplicate."""

from __future__ import annotations

from datetime import timedelta

from tests.unit.dcgm_quality_cases import T0, payload, q_rows, sample, screen
from transforms.helpers.dcgm_quality import DUPLICATE_REASON


def test_restart_duplicates_of_equal_length_keep_the_smallest_hostname() -> None:
    old, new = "dcgm-exporter-aaaa", "dcgm-exporter-bbbb"  # the exporter pod name in Hostname
    rows = [
        sample(s, hostname=old, sm_active=0.5, power_w=200.0, extra_labels='{"instance":"10.0.0.1:9400"}')
        for s in (0, 15, 30)
    ]
    rows += [
        sample(s, hostname=new, sm_active=0.5, power_w=201.0, extra_labels='{"instance":"10.0.0.2:9400"}')
        for s in (15, 30, 45)
    ]
    result = screen(rows)
    assert result.clean.select("ts", "hostname", "power_w").rows() == [
        (T0, old, 200.0),
        (T0 + timedelta(seconds=15), old, 200.0),
        (T0 + timedelta(seconds=30), old, 200.0),
        (T0 + timedelta(seconds=45), new, 201.0),
    ]
    loc = f"hostname={new} gpu=0 uuid=GPU-a gpu_i_id=- hpc_job=7 field="
    assert q_rows(result) == [(loc + "power_w", DUPLICATE_REASON, 2), (loc + "sm_active", DUPLICATE_REASON, 2)]
    assert payload(result) == {
        "example_value": 201.0,
        "extra_labels": '{"instance":"10.0.0.2:9400"}',
        "first_ts": "2026-03-01T10:00:15",
        "last_ts": "2026-03-01T10:00:30",
    }
    assert (result.counts["duplicate_rows"], result.counts["duplicate_values"]) == (2, 4)


def test_restart_duplicates_keep_the_longer_series_before_the_smaller_name() -> None:
    # a second exporter pod reported this GPU for two scrapes: it must not win on its name
    rows = [sample(s, hostname="node-a", sm_active=0.5) for s in (0, 15, 30, 45)]
    rows += [sample(s, hostname="dcgm-exporter-7xk2p", sm_active=0.5) for s in (15, 30)]
    result = screen(rows)
    assert result.clean["hostname"].to_list() == ["node-a"] * 4
    assert q_rows(result) == [
        ("hostname=dcgm-exporter-7xk2p gpu=0 uuid=GPU-a gpu_i_id=- hpc_job=7 field=sm_active", DUPLICATE_REASON, 2)
    ]
    shuffled = screen(rows[::-1])
    assert shuffled.clean.equals(result.clean) and shuffled.quarantine.equals(result.quarantine)


def test_restart_duplicates_differing_only_in_extra_labels() -> None:
    rows = [
        sample(0, sm_active=0.1, extra_labels='{"instance":"b"}'),
        sample(0, sm_active=0.2, extra_labels='{"instance":"a"}'),
    ]
    result = screen(rows)
    assert result.clean.select("extra_labels", "sm_active").rows() == [('{"instance":"a"}', 0.2)]
    assert result.counts["duplicate_rows"] == 1


def test_different_jobs_instances_or_gpus_are_not_duplicates() -> None:
    rows = [
        sample(0, sm_active=0.1),
        sample(0, sm_active=0.2, hpc_job="8", hostname="other"),  # two jobs sharing the GPU
        sample(0, sm_active=0.3, gpu_i_id=1, hostname="other"),  # a MIG instance
        sample(0, sm_active=0.4, uuid="GPU-b", hostname="other"),  # another GPU
        sample(0, sm_active=0.5, uuid=None, hostname="x"),  # no uuid: never merged
        sample(0, sm_active=0.6, uuid=None, hostname="y"),
    ]
    result = screen(rows)
    assert sorted(result.clean["sm_active"].to_list()) == [0.1, 0.2, 0.3, 0.4, 0.5, 0.6]
    assert result.counts["duplicate_rows"] == 0 and result.quarantine.height == 0
