"""config: MIG profiles, their weights and the capacity they give."""

from __future__ import annotations

import pytest

from config import EXAMPLE_CONFIG, load_config, parse_config, parse_mig_profile
from tests.unit.config_cases import FIXTURES, example, put


def test_capacity_counts_mig_gpus_by_layout_weight() -> None:
    assert load_config(EXAMPLE_CONFIG).capacity_gpus("alpha") == pytest.approx(112.0)
    overridden = parse_config(example(put("rates.mig_profile_weights", {"1g.10gb": 0.125})))
    assert overridden.capacity_gpus("alpha") == pytest.approx(96 + 16 * (5 / 7 + 0.25))
    inventory = overridden.inventory_frame()
    assert inventory["gpu_fraction"].sum() == pytest.approx(overridden.capacity_gpus("alpha"))
    assert load_config(FIXTURES / "minimal.toml").capacity_gpus("sim") == 8.0


@pytest.mark.parametrize(
    ("profile", "weight"),
    [
        ("3g.40gb", 3 / 7),
        ("7g.80gb", 1.0),
        ("1g.10gb", 1 / 7),
        ("2g.20gb", 2 / 7),
        ("1g.10gb+me", 1 / 7),
    ],
)
def test_mig_weight_defaults_to_slices_over_seven(profile: str, weight: float) -> None:
    assert load_config(EXAMPLE_CONFIG).rates.mig_weight(profile) == pytest.approx(weight)


def test_mig_weight_override_and_invalid_profile() -> None:
    rates = parse_config(example(put("rates.mig_profile_weights", {"1g.10gb": 0.125}))).rates
    assert rates.mig_weight("1g.10gb") == 0.125
    assert rates.mig_weight("1g.10gb+me") == pytest.approx(1 / 7)  # a different profile
    with pytest.raises(ValueError, match="unknown MIG profile"):
        rates.mig_weight("3g")


def test_parse_mig_profile() -> None:
    spec = parse_mig_profile("1g.12gb+me")
    assert (spec.slices, spec.memory_gb, spec.media_extensions) == (1, 12, True)
    assert parse_mig_profile("4g.40gb").media_extensions is False
    for bad in ("0g.10gb", "8g.80gb", "3g.40GB", "3g.0gb", "3g.40gb+mx", "mig-3g.40gb"):
        with pytest.raises(ValueError):
            parse_mig_profile(bad)
