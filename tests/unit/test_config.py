"""cardhours.config: the example validates, every class of mistake is reported at its key,
paths resolve against the config file, and the frames/helpers the pipeline uses."""

from __future__ import annotations

import copy
import pickle
import re
import tomllib
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from pydantic import BaseModel, ValidationError

import cardhours.config as cfg
from cardhours.config import (
    ACCOUNTS_SCHEMA,
    EXAMPLE_CONFIG,
    INVENTORY_SCHEMA,
    NAMESPACES_SCHEMA,
    Config,
    ConfigError,
    FlagsConfig,
    Problem,
    QuotasConfig,
    load_config,
    parse_config,
    parse_mig_profile,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "config"
EXAMPLE: dict[str, Any] = tomllib.loads(EXAMPLE_CONFIG.read_text())
SOURCE = "site.toml"

# ---------------------------------------------------------------- helpers


def _walk(data: Any, key: str) -> tuple[Any, str | int]:
    """The container holding a dotted key path ("a.b[0].c") and the last step."""
    steps: list[str | int] = []
    for name, index in re.findall(r"([^.\[\]]+)|\[(\d+)\]", key):
        steps.append(int(index) if index else name)
    for step in steps[:-1]:
        data = data[step]
    return data, steps[-1]


def put(key: str, value: Any):
    def change(data: dict[str, Any]) -> None:
        container, last = _walk(data, key)
        container[last] = value
    return change


def drop(key: str):
    def change(data: dict[str, Any]) -> None:
        container, last = _walk(data, key)
        del container[last]
    return change


def rename(key: str, new_name: str):
    def change(data: dict[str, Any]) -> None:
        container, last = _walk(data, key)
        container[new_name] = container.pop(last)
    return change


def append(key: str, value: Any):
    def change(data: dict[str, Any]) -> None:
        container, last = _walk(data, key)
        container[last].append(copy.deepcopy(value(data) if callable(value) else value))
    return change


def example(*changes) -> dict[str, Any]:
    data = copy.deepcopy(EXAMPLE)
    for change in changes:
        change(data)
    return data


def problems_of(data: dict[str, Any]) -> list[Problem]:
    with pytest.raises(ConfigError) as info:
        parse_config(data, source=SOURCE)
    return info.value.problems


# ---------------------------------------------------------------- the example


def test_example_config_validates() -> None:
    config = load_config(EXAMPLE_CONFIG)
    assert config.cluster_names == ["alpha"]
    assert config.cluster("alpha").prometheus is not None
    assert config.rates.gpu_hour == {"H100": 2.50, "A100": 1.40}
    assert config.rates.mig_profile_weights == {}
    assert config.quotas.departments == {"vision": 32, "nlp": 48, "search": 16}


def test_example_flags_are_the_defaults() -> None:
    # The example says "defaults shown": keep it true.
    assert load_config(EXAMPLE_CONFIG).flags == FlagsConfig()


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


# ---------------------------------------------------------------- broken configs

NG0 = "clusters[0].inventory.node_groups[0]"
NG1 = "clusters[0].inventory.node_groups[1]"
PROM = "clusters[0].prometheus"

BROKEN = [
    # unknown keys, with suggestions
    ("misspelled-key", [rename(f"{PROM}.step_seconds", "step_secnds")],
     f"{PROM}.step_secnds", "unknown key; did you mean 'step_seconds'?"),
    ("misspelled-section", [put("flag", {})], "flag", "did you mean 'flags'?"),
    ("unknown-key-listing", [put(f"{NG0}.colour", "red")],
     f"{NG0}.colour", "unknown key (valid keys: hosts, gpu_model, model_name"),
    # wrong types
    ("int-as-word", [put(f"{NG0}.gpus_per_node", "eight")],
     f"{NG0}.gpus_per_node", "wrong type: must be an integer, got string 'eight'"),
    ("quoted-number", [put(f"{PROM}.step_seconds", "30")], f"{PROM}.step_seconds", "wrong type"),
    ("bool-as-string", [put(f"{PROM}.verify_tls", "yes")], f"{PROM}.verify_tls", "must be a boolean"),
    ("section-as-string", [put(PROM, "http://x")], PROM, "wrong type: must be a table"),
    ("clusters-as-table", [put("clusters", {"name": "alpha"})], "clusters", "must be an array"),
    ("path-as-number", [put("warehouse.path", 5)], "warehouse.path", "must be a path string"),
    ("empty-path", [put("warehouse.path", "")], "warehouse.path", "must not be empty"),
    # missing keys
    ("missing-currency", [drop("rates.currency")], "rates.currency", "required key is missing"),
    ("missing-section", [drop("warehouse")], "warehouse", "required key is missing"),
    ("missing-in-list", [drop(f"{NG1}.gpu_model")], f"{NG1}.gpu_model", "required key is missing"),
    ("no-clusters", [put("clusters", [])], "clusters", "must not be empty"),
    ("no-node-groups", [put("clusters[0].inventory.node_groups", [])],
     "clusters[0].inventory.node_groups", "must not be empty"),
    # zero / negative numbers
    ("zero-step", [put(f"{PROM}.step_seconds", 0)], f"{PROM}.step_seconds", "greater than 0 (got 0)"),
    ("negative-retries", [put(f"{PROM}.max_retries", -1)], f"{PROM}.max_retries", "greater than or equal to 0"),
    ("negative-rate", [put("rates.gpu_hour.H100", -2.5)], "rates.gpu_hour.H100", "greater than or equal to 0"),
    ("zero-gpus", [put(f"{NG0}.gpus_per_node", 0)], f"{NG0}.gpus_per_node", "greater than 0"),
    ("zero-threshold", [put("flags.idle_tail_hours", 0)], "flags.idle_tail_hours", "greater than 0"),
    ("negative-quota", [put("quotas.departments.vision", -1)],
     "quotas.departments.vision", "greater than or equal to 0"),
    ("zero-overcommit", [put("quotas.overcommit_ratio", 0)], "quotas.overcommit_ratio", "greater than 0"),
    # ratios
    ("ratio-above-one", [put("flags.memory_held_fraction", 1.5)],
     "flags.memory_held_fraction", "less than or equal to 1 (got 1.5)"),
    ("ratio-negative", [put("flags.zero_util_threshold", -0.1)],
     "flags.zero_util_threshold", "greater than or equal to 0"),
    ("mig-weight-zero", [put("rates.mig_profile_weights", {"1g.10gb": 0})],
     'rates.mig_profile_weights."1g.10gb"', "greater than 0"),
    ("severity-order", [put("flags.low_util_high", 0.5)], "flags.low_util_high", "must not exceed low_util_medium"),
    # org references
    ("account-unknown-department", [put("org.accounts[1].department", "nlpp")],
     "org.accounts[1].department", "unknown department 'nlpp'; did you mean 'nlp'?"),
    ("namespace-unknown-department", [put("org.namespaces[0].department", "serch")],
     "org.namespaces[0].department", "unknown department 'serch'"),
    ("quota-unknown-department", [put("quotas.departments", {"visoin": 4})],
     "quotas.departments.visoin", "unknown department 'visoin'; did you mean 'vision'?"),
    ("department-unknown-division", [put("org.departments.vision.division", "reserch")],
     "org.departments.vision.division", "unknown division 'reserch'; did you mean 'research'?"),
    ("reserved-department", [put("org.departments.unmapped", {"name": "X", "division": "research"})],
     "org.departments.unmapped", "reserved"),
    ("department-id-not-slug", [put("org.departments.Vision", {"name": "X", "division": "research"})],
     "org.departments.Vision", "invalid key: must be a lowercase identifier"),
    ("account-mapped-twice",
     [append("org.accounts", {"account": "vis-train", "department": "nlp", "clusters": ["alpha"]})],
     "org.accounts[3].account", "already mapped by org.accounts[0]"),
    ("mapping-unknown-cluster", [put("org.accounts[2].clusters", ["beta"])],
     "org.accounts[2].clusters[0]", "unknown cluster 'beta'"),
    ("mapping-empty-clusters", [put("org.accounts[2].clusters", [])], "org.accounts[2].clusters", "must not be empty"),
    # clusters
    ("duplicate-cluster", [append("clusters", lambda d: d["clusters"][0])],
     "clusters[1].name", "duplicate cluster name 'alpha' (also clusters[0])"),
    ("cluster-name-not-slug", [put("clusters[0].name", "Alpha")], "clusters[0].name", "lowercase identifier"),
    ("sacct-neither", [drop("clusters[0].slurm.sacct_command")], "clusters[0].slurm", "neither is set"),
    ("sacct-both", [put("clusters[0].slurm.sacct_file", "sacct.txt")], "clusters[0].slurm", "both are set"),
    ("file-source-without-path", [put("clusters[0].metrics", {"source": "file"})],
     "clusters[0].metrics.path", "required key is missing: metrics.source is 'file'"),
    ("unknown-source", [put("clusters[0].metrics.source", "influx")],
     "clusters[0].metrics.source", "must be 'prometheus' or 'file'"),
    ("prometheus-section-missing", [drop(PROM)], PROM, "required key is missing: metrics.source is 'prometheus'"),
    ("bad-url", [put(f"{PROM}.url", "prometheus:9090")], f"{PROM}.url", "http:// or https://"),
    ("secret-in-env-key", [put(f"{PROM}.bearer_token_env", "eyJhbGciOi.secret")],
     f"{PROM}.bearer_token_env", "name of an environment variable"),
    ("basic-auth-half", [put(f"{PROM}.basic_auth_user_env", "PROM_USER")],
     f"{PROM}.basic_auth_password_env", "required key is missing"),
    ("selector-without-braces", [put(f"{PROM}.selector", 'job="dcgm"')], f"{PROM}.selector", "in braces"),
    ("unknown-dcgm-field", [put(f"{PROM}.metric_names", {"DCGM_FI_PROF_SM_ACTIV": "sm"})],
     f"{PROM}.metric_names.DCGM_FI_PROF_SM_ACTIV", "did you mean 'DCGM_FI_PROF_SM_ACTIVE'?"),
    ("bad-metric-name", [put(f"{PROM}.metric_names", {"DCGM_FI_PROF_SM_ACTIVE": "sm active"})],
     f"{PROM}.metric_names.DCGM_FI_PROF_SM_ACTIVE", "not a valid Prometheus metric name"),
    # inventory
    ("hostlist-bad-range", [put(f"{NG0}.hosts", "gpu-[012-001]")], f"{NG0}.hosts", "invalid hostlist: bad range"),
    ("hostlist-unbalanced", [put(f"{NG0}.hosts", "gpu-[001-012")], f"{NG0}.hosts", "invalid hostlist: unbalanced"),
    ("hostlist-empty", [put(f"{NG0}.hosts", " ")], f"{NG0}.hosts", "names no hosts"),
    ("host-in-two-groups", [put(f"{NG1}.hosts", "gpu-[012-014]")],
     f"{NG1}.hosts", "gpu-012 already in node_groups[0]"),
    ("mig-profile-typo", [put(f"{NG1}.mig_layout[0]", "3g.40g")],
     f"{NG1}.mig_layout[0]", "unknown MIG profile '3g.40g'"),
    ("mig-profile-eight-slices", [put(f"{NG1}.mig_layout", ["8g.80gb"])],
     f"{NG1}.mig_layout[0]", "unknown MIG profile"),
    ("mig-weight-bad-profile", [put("rates.mig_profile_weights", {"2x.20gb": 0.3})],
     'rates.mig_profile_weights."2x.20gb"', "invalid key: unknown MIG profile"),
    ("mig-layout-overfull", [put(f"{NG1}.mig_layout", ["4g.40gb", "3g.40gb", "1g.10gb"])],
     f"{NG1}.mig_layout", "uses 8 compute slices"),
    ("mig-weights-over-one", [put("rates.mig_profile_weights", {"3g.40gb": 0.9})],
     f"{NG1}.mig_layout", "a GPU can count for at most 1.0"),
    # rates and quotas
    ("currency-lowercase", [put("rates.currency", "eur")], "rates.currency", "3-letter uppercase ISO 4217"),
    ("currency-long", [put("rates.currency", "EURO")], "rates.currency", "ISO 4217"),
    ("gpu-model-without-rate", [drop("rates.gpu_hour.A100")], f"{NG1}.gpu_model", "no rate for gpu_model 'A100'"),
    ("quotas-over-capacity", [put("quotas.departments.nlp", 200)],
     "quotas.departments", "quotas sum to 248 GPUs, more than overcommit_ratio 1 x capacity 112"),
]


@pytest.mark.parametrize(("changes", "key", "fragment"), [c[1:] for c in BROKEN], ids=[c[0] for c in BROKEN])
def test_broken_config_names_key_and_reason(changes, key: str, fragment: str) -> None:
    problems = problems_of(example(*changes))
    assert [p.key for p in problems] == [key]
    assert fragment in problems[0].reason
    with pytest.raises(ConfigError, match=re.escape(f"{SOURCE}: {key}: ")):
        parse_config(example(*changes), source=SOURCE)


def test_allowed_variations_validate() -> None:
    config = parse_config(example(
        put("rates.gpu_hour.B200", 5.0),  # a rate no node group uses is fine
        put("org", {}),  # everything unmapped downstream
        drop("flags"),
        drop("quotas"),
        put(f"{NG1}.mig_layout", ["1g.10gb+me", "3g.40gb"]),  # not all slices used
        put("clusters[0].slurm.slurm_cluster", "alpha-slurm"),
    ))
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


def test_file_with_several_problems_reports_each_on_its_own_line() -> None:
    path = FIXTURES / "many_problems.toml"
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert str(info.value).splitlines() == [
        f"{path}: clusters[0].prometheus.step_secnds: unknown key; did you mean 'step_seconds'?",
        f"{path}: clusters[0].inventory.node_groups[0].gpus_per_node: "
        "wrong type: must be an integer, got string 'four'",
        f"{path}: flags.memory_held_fraction: must be less than or equal to 1 (got 1.5)",
    ]


def test_invalid_toml_reports_line_and_column() -> None:
    path = FIXTURES / "bad_syntax.toml"
    with pytest.raises(ConfigError) as info:
        load_config(path)
    message = str(info.value)
    assert message.startswith(f"{path}: invalid TOML: ")
    assert "line 4, column" in message
    assert isinstance(info.value, ValueError)


def test_config_error_survives_pickling() -> None:
    error = ConfigError("site.toml", [Problem("rates.currency", "required key is missing"), Problem("", "x")])
    clone = pickle.loads(pickle.dumps(error))
    assert str(clone) == str(error) == "site.toml: rates.currency: required key is missing\nsite.toml: x"
    assert clone.problems == error.problems and clone.source == "site.toml"


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"nope\.toml: file not found$"):
        load_config(tmp_path / "nope.toml")
    with pytest.raises(ConfigError, match="is a directory"):
        load_config(tmp_path)


# ---------------------------------------------------------------- paths


def test_relative_paths_resolve_against_the_config_directory() -> None:
    config = load_config(FIXTURES / "minimal.toml")
    cluster = config.cluster("sim")
    assert config.warehouse.path == FIXTURES / "cardhours.duckdb"
    assert config.reports.dir == FIXTURES / "../out/reports"
    assert cluster.metrics.path == FIXTURES / "metrics"
    assert cluster.slurm is not None and cluster.slurm.sacct_file == FIXTURES / "sacct.txt"


def test_relative_config_path_gives_absolute_paths(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(FIXTURES.parent)
    config = load_config("config/minimal.toml")
    assert config.warehouse.path.is_absolute()
    assert config.warehouse.path == FIXTURES / "cardhours.duckdb"


def test_ca_bundle_and_absolute_and_home_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    config = parse_config(example(
        put(f"{PROM}.ca_bundle", "certs/ca.pem"),
        put("warehouse.path", "/var/lib/cardhours/wh.duckdb"),
        put("reports.dir", "~/reports"),
    ), base_dir=tmp_path)
    prometheus = config.cluster("alpha").prometheus
    assert prometheus is not None and prometheus.ca_bundle == tmp_path / "certs/ca.pem"
    assert config.warehouse.path == Path("/var/lib/cardhours/wh.duckdb")
    assert config.reports.dir == tmp_path / "home" / "reports"


def test_parse_config_without_base_dir_keeps_relative_paths() -> None:
    assert parse_config(example()).warehouse.path == Path("cardhours.duckdb")


# ---------------------------------------------------------------- helpers the pipeline uses


def test_defaults_for_absent_sections() -> None:
    config = load_config(FIXTURES / "minimal.toml")
    assert config.flags == FlagsConfig() and config.flags.debug_partition == "debug"
    assert config.quotas.overcommit_ratio == 1.0 and config.quotas.departments == {}
    assert config.rates.mig_profile_weights == {}
    assert config.accounts_frame().is_empty() and config.accounts_frame().schema == ACCOUNTS_SCHEMA


def test_cluster_lookup() -> None:
    config = load_config(EXAMPLE_CONFIG)
    assert config.cluster("alpha").name == "alpha"
    with pytest.raises(KeyError, match="unknown cluster 'beta'; configured: alpha"):
        config.cluster("beta")


def _two_clusters() -> Config:
    return parse_config(example(append("clusters", lambda d: {**d["clusters"][0], "name": "beta"})))


def test_accounts_frame_one_row_per_cluster_and_applicable_mapping() -> None:
    frame = _two_clusters().accounts_frame()
    assert frame.schema == ACCOUNTS_SCHEMA
    assert frame.select("cluster", "account").rows() == [
        ("alpha", "vis-train"), ("alpha", "nlp-pretrain"), ("alpha", "search-infer"),
        ("beta", "vis-train"), ("beta", "nlp-pretrain"),  # search-infer is limited to alpha
    ]
    assert frame.row(2, named=True) == {
        "cluster": "alpha", "account": "search-infer", "department": "search",
        "department_name": "Search Ranking", "division": "product", "division_name": "Product",
    }


def test_namespaces_frame() -> None:
    frame = _two_clusters().namespaces_frame()
    assert frame.schema == NAMESPACES_SCHEMA
    assert frame.rows() == [
        ("alpha", "search-serving", "search", "Search Ranking", "product", "Product"),
        ("beta", "search-serving", "search", "Search Ranking", "product", "Product"),
    ]


def test_inventory_frame_whole_gpus_and_mig_instances() -> None:
    frame = load_config(EXAMPLE_CONFIG).inventory_frame()
    assert frame.schema == INVENTORY_SCHEMA
    assert frame.height == 12 * 8 + 2 * 8 * 4
    whole = frame.filter(pl.col("gpu_model") == "H100")
    assert whole["gpu_i_id"].null_count() == whole.height == 96
    assert whole["gpu_fraction"].unique().to_list() == [1.0]
    assert whole["memory_mib"].unique().to_list() == [81559]
    assert whole.filter(pl.col("hostname") == "gpu-012")["gpu"].to_list() == list(range(8))
    one_gpu = frame.filter((pl.col("hostname") == "gpu-014") & (pl.col("gpu") == 7))
    assert one_gpu.select("gpu_i_id", "gpu_i_profile", "memory_mib", "nvlink_domain").rows() == [
        (0, "3g.40gb", 40960, "nvl-b"), (1, "2g.20gb", 20480, "nvl-b"),
        (2, "1g.10gb", 10240, "nvl-b"), (3, "1g.10gb", 10240, "nvl-b"),
    ]
    assert one_gpu["gpu_fraction"].to_list() == pytest.approx([3 / 7, 2 / 7, 1 / 7, 1 / 7])
    assert sorted(frame["hostname"].unique()) == [f"gpu-{n:03d}" for n in range(1, 15)]


def test_capacity_counts_mig_gpus_by_layout_weight() -> None:
    assert load_config(EXAMPLE_CONFIG).capacity_gpus("alpha") == pytest.approx(112.0)
    overridden = parse_config(example(put("rates.mig_profile_weights", {"1g.10gb": 0.125})))
    assert overridden.capacity_gpus("alpha") == pytest.approx(96 + 16 * (5 / 7 + 0.25))
    inventory = overridden.inventory_frame()
    assert inventory["gpu_fraction"].sum() == pytest.approx(overridden.capacity_gpus("alpha"))
    assert load_config(FIXTURES / "minimal.toml").capacity_gpus("sim") == 8.0


@pytest.mark.parametrize(("profile", "weight"), [
    ("3g.40gb", 3 / 7), ("7g.80gb", 1.0), ("1g.10gb", 1 / 7), ("2g.20gb", 2 / 7), ("1g.10gb+me", 1 / 7),
])
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


def test_prometheus_metric_name_overrides() -> None:
    config = parse_config(example(put(f"{PROM}.metric_names", {"DCGM_FI_PROF_SM_ACTIVE": "site_sm_active"})))
    prometheus = config.cluster("alpha").prometheus
    assert prometheus is not None
    assert prometheus.metric_name("DCGM_FI_PROF_SM_ACTIVE") == "site_sm_active"
    assert prometheus.metric_name("DCGM_FI_DEV_GPU_UTIL") == "DCGM_FI_DEV_GPU_UTIL"
    with pytest.raises(KeyError):
        prometheus.metric_name("DCGM_FI_NOPE")


def test_file_source_step_seconds_sets_sample_step(tmp_path) -> None:
    text = EXAMPLE_CONFIG.read_text().replace('source = "prometheus"', 'source = "file"\npath = "m"\nstep_seconds = 300', 1)
    path = tmp_path / "c.toml"
    path.write_text(text)
    assert load_config(path).clusters[0].sample_step_seconds == 300
    assert load_config(EXAMPLE_CONFIG).clusters[0].sample_step_seconds == 30
