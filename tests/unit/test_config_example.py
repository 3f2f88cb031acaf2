"""config: the example validates, allowed variations, and defaults for absent settings."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, ValidationError

import config as cfg
from config import (
    ACCOUNTS_SCHEMA,
    EXAMPLE_CONFIG,
    FlagsConfig,
    QuotasConfig,
    load_config,
    parse_config,
)
from tests.unit.config_cases import EXAMPLE, FIXTURES, NG1, PROM, drop, example, put


def test_example_config_validates() -> None:
    config = load_config(EXAMPLE_CONFIG)
    assert config.cluster_names == ["alpha"]
    assert config.cluster("alpha").prometheus is not None
    assert config.rates.gpu_hour == {"H100": 2.50, "A100": 1.40}
    assert config.rates.mig_profile_weights == {}
    assert config.quotas.departments == {"vision": 32, "nlp": 48, "search": 16}


def test_example_flags_are_the_defaults() -> None:
    # The example says "defaults shown": keep it true, for every threshold.
    assert load_config(EXAMPLE_CONFIG).flags == FlagsConfig()
    assert list(EXAMPLE["flags"]) == list(FlagsConfig.model_fields)


def test_every_threshold_is_described() -> None:
    assert [name for name, field in FlagsConfig.model_fields.items() if not field.description] == []


def test_every_model_forbids_unknown_keys_and_is_frozen() -> None:
    models = [v for v in vars(cfg).values() if isinstance(v, type) and issubclass(v, BaseModel)]
    assert len(models) >= 17
    for model in models:
        assert model.model_config.get("extra") == "forbid", model
        assert model.model_config.get("frozen") is True, model


def test_config_is_immutable() -> None:
    config = load_config(EXAMPLE_CONFIG)
    with pytest.raises(ValidationError):
        config.rates.currency = "USD"  # type: ignore[misc]


def test_allowed_variations_validate() -> None:
    config = parse_config(
        example(
            put("rates.gpu_hour.B200", 5.0),  # a rate no node group uses is fine
            put("org", {}),  # everything unmapped downstream
            drop("flags"),
            drop("quotas"),
            put(f"{NG1}.mig_layout", ["1g.10gb+me", "3g.40gb"]),  # not all slices used
            put("clusters[0].slurm.slurm_cluster", "alpha-slurm"),
        )
    )
    assert config.org.accounts == [] and config.org.departments == {}
    assert config.flags == FlagsConfig() and config.quotas == QuotasConfig()
    assert config.cluster("alpha").slurm is not None
    assert config.cluster("alpha").slurm.slurm_cluster == "alpha-slurm"


def test_slurm_cluster_defaults_to_cluster_name() -> None:
    slurm = load_config(EXAMPLE_CONFIG).cluster("alpha").slurm
    assert slurm is not None and slurm.slurm_cluster == "alpha"


def test_sample_step_seconds() -> None:
    stepped = parse_config(example(put(f"{PROM}.step_seconds", 15)))
    assert stepped.cluster("alpha").sample_step_seconds == 15
    assert load_config(FIXTURES / "minimal.toml").cluster("sim").sample_step_seconds == 30  # no prometheus section


def test_defaults_for_absent_sections() -> None:
    config = load_config(FIXTURES / "minimal.toml")
    assert config.flags == FlagsConfig() and config.flags.debug_partition == "debug"
    assert config.quotas.overcommit_ratio == 1.0 and config.quotas.departments == {}
    assert config.rates.mig_profile_weights == {}
    assert config.accounts_frame().is_empty() and config.accounts_frame().schema == ACCOUNTS_SCHEMA


def test_file_source_step_seconds_sets_sample_step(tmp_path) -> None:
    text = EXAMPLE_CONFIG.read_text().replace(
        'source = "prometheus"', 'source = "file"\npath = "m"\nstep_seconds = 300', 1
    )
    path = tmp_path / "c.toml"
    path.write_text(text)
    assert load_config(path).clusters[0].sample_step_seconds == 300
    assert load_config(EXAMPLE_CONFIG).clusters[0].sample_step_seconds == 30


def test_example_close_section_is_the_defaults() -> None:
    # The example's [close] says "defaults shown": keep it true; a config without it gets them.
    from config import CloseConfig

    assert load_config(EXAMPLE_CONFIG).close == CloseConfig()
    assert (CloseConfig().grace_days, CloseConfig().min_coverage, CloseConfig().max_quarantine_share) == (5, 0.9, 0.01)
    assert load_config(FIXTURES / "minimal.toml").close == CloseConfig()
