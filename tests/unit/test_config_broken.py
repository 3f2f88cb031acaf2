"""config: every class of mistake in a config is reported at its dotted key with a reason."""

from __future__ import annotations

import re

import pytest

from config import ConfigError, parse_config
from tests.unit.config_cases import NG0, NG1, PROM, SOURCE, append, drop, example, problems_of, put, rename

PUBLISH_SECTION = {"host": "db.example.org", "database": "analytics", "user": "cardhours"}


def publish_on(data: dict) -> None:
    """Switch on the example's commented-out [publish] section (a fresh copy for each case)."""
    data["publish"] = dict(PUBLISH_SECTION, password_env="CARDHOURS_PUBLISH_PASSWORD")


BROKEN = [
    # unknown keys, with suggestions
    (
        "misspelled-key",
        [rename(f"{PROM}.step_seconds", "step_secnds")],
        f"{PROM}.step_secnds",
        "unknown key; did you mean 'step_seconds'?",
    ),
    ("misspelled-section", [put("flag", {})], "flag", "did you mean 'flags'?"),
    (
        "unknown-key-listing",
        [put(f"{NG0}.colour", "red")],
        f"{NG0}.colour",
        "unknown key (valid keys: hosts, gpu_model, model_name",
    ),
    # wrong types
    (
        "int-as-word",
        [put(f"{NG0}.gpus_per_node", "eight")],
        f"{NG0}.gpus_per_node",
        "wrong type: must be an integer, got string 'eight'",
    ),
    ("quoted-number", [put(f"{PROM}.step_seconds", "30")], f"{PROM}.step_seconds", "wrong type"),
    ("bool-as-string", [put(f"{PROM}.verify_tls", "yes")], f"{PROM}.verify_tls", "must be a boolean"),
    ("section-as-string", [put(PROM, "http://x")], PROM, "wrong type: must be a table"),
    ("clusters-as-table", [put("clusters", {"name": "alpha"})], "clusters", "must be an array"),
    ("path-as-number", [put("warehouse.path", 5)], "warehouse.path", "must be a path string"),
    ("empty-path", [put("warehouse.path", "")], "warehouse.path", "must not be empty"),
    (
        "templates-dir-missing",
        [put("reports.templates_dir", "no-such-templates")],
        "reports.templates_dir",
        "no directory no-such-templates: create it with the templates to override",
    ),
    # missing keys
    ("missing-currency", [drop("rates.currency")], "rates.currency", "required key is missing"),
    ("missing-section", [drop("warehouse")], "warehouse", "required key is missing"),
    ("missing-in-list", [drop(f"{NG1}.gpu_model")], f"{NG1}.gpu_model", "required key is missing"),
    ("no-clusters", [put("clusters", [])], "clusters", "must not be empty"),
    (
        "no-node-groups",
        [put("clusters[0].inventory.node_groups", [])],
        "clusters[0].inventory.node_groups",
        "must not be empty",
    ),
    # zero / negative numbers
    ("zero-step", [put(f"{PROM}.step_seconds", 0)], f"{PROM}.step_seconds", "greater than 0 (got 0)"),
    ("negative-retries", [put(f"{PROM}.max_retries", -1)], f"{PROM}.max_retries", "greater than or equal to 0"),
    ("negative-rate", [put("rates.gpu_hour.H100", -2.5)], "rates.gpu_hour.H100", "greater than or equal to 0"),
    ("zero-gpus", [put(f"{NG0}.gpus_per_node", 0)], f"{NG0}.gpus_per_node", "greater than 0"),
    ("zero-threshold", [put("flags.idle_tail_hours", 0)], "flags.idle_tail_hours", "greater than 0"),
    (
        "negative-quota",
        [put("quotas.departments.vision", -1)],
        "quotas.departments.vision",
        "greater than or equal to 0",
    ),
    ("zero-overcommit", [put("quotas.overcommit_ratio", 0)], "quotas.overcommit_ratio", "greater than 0"),
    # ratios
    (
        "ratio-above-one",
        [put("flags.memory_held_fraction", 1.5)],
        "flags.memory_held_fraction",
        "less than or equal to 1 (got 1.5)",
    ),
    (
        "ratio-negative",
        [put("flags.zero_util_threshold", -0.1)],
        "flags.zero_util_threshold",
        "greater than or equal to 0",
    ),
    (
        "mig-weight-zero",
        [put("rates.mig_profile_weights", {"1g.10gb": 0})],
        'rates.mig_profile_weights."1g.10gb"',
        "greater than 0",
    ),
    ("severity-order", [put("flags.low_util_high", 0.5)], "flags.low_util_high", "must not exceed low_util_medium"),
    (
        "close-coverage-above-one",
        [put("close.min_coverage", 90)],
        "close.min_coverage",
        "less than or equal to 1 (got 90)",
    ),
    ("close-negative-grace", [put("close.grace_days", -1)], "close.grace_days", "greater than or equal to 0"),
    ("close-misspelled", [put("close.grace_day", 3)], "close.grace_day", "did you mean 'grace_days'?"),
    # org references
    (
        "account-unknown-department",
        [put("org.accounts[1].department", "nlpp")],
        "org.accounts[1].department",
        "unknown department 'nlpp'; did you mean 'nlp'?",
    ),
    (
        "namespace-unknown-department",
        [put("org.namespaces[0].department", "serch")],
        "org.namespaces[0].department",
        "unknown department 'serch'",
    ),
    (
        "quota-unknown-department",
        [put("quotas.departments", {"visoin": 4})],
        "quotas.departments.visoin",
        "unknown department 'visoin'; did you mean 'vision'?",
    ),
    (
        "department-unknown-division",
        [put("org.departments.vision.division", "reserch")],
        "org.departments.vision.division",
        "unknown division 'reserch'; did you mean 'research'?",
    ),
    (
        "reserved-department",
        [put("org.departments.unmapped", {"name": "X", "division": "research"})],
        "org.departments.unmapped",
        "reserved",
    ),
    (
        "department-id-not-slug",
        [put("org.departments.Vision", {"name": "X", "division": "research"})],
        "org.departments.Vision",
        "invalid key: must be a lowercase identifier",
    ),
    (
        "account-mapped-twice",
        [append("org.accounts", {"account": "vis-train", "department": "nlp", "clusters": ["alpha"]})],
        "org.accounts[3].account",
        "already mapped by org.accounts[0]",
    ),
    (
        "mapping-unknown-cluster",
        [put("org.accounts[2].clusters", ["beta"])],
        "org.accounts[2].clusters[0]",
        "unknown cluster 'beta'",
    ),
    ("mapping-empty-clusters", [put("org.accounts[2].clusters", [])], "org.accounts[2].clusters", "must not be empty"),
    # clusters
    (
        "duplicate-cluster",
        [append("clusters", lambda d: d["clusters"][0])],
        "clusters[1].name",
        "duplicate cluster name 'alpha' (also clusters[0])",
    ),
    ("cluster-name-not-slug", [put("clusters[0].name", "Alpha")], "clusters[0].name", "lowercase identifier"),
    ("sacct-neither", [drop("clusters[0].slurm.sacct_command")], "clusters[0].slurm", "neither is set"),
    ("sacct-both", [put("clusters[0].slurm.sacct_file", "sacct.txt")], "clusters[0].slurm", "both are set"),
    (
        "file-source-without-path",
        [put("clusters[0].metrics", {"source": "file"})],
        "clusters[0].metrics.path",
        "required key is missing: metrics.source is 'file'",
    ),
    (
        "unknown-source",
        [put("clusters[0].metrics.source", "influx")],
        "clusters[0].metrics.source",
        "must be 'prometheus' or 'file'",
    ),
    ("prometheus-section-missing", [drop(PROM)], PROM, "required key is missing: metrics.source is 'prometheus'"),
    ("bad-url", [put(f"{PROM}.url", "prometheus:9090")], f"{PROM}.url", "http:// or https://"),
    (
        "secret-in-env-key",
        [put(f"{PROM}.bearer_token_env", "eyJhbGciOi.secret")],
        f"{PROM}.bearer_token_env",
        "name of an environment variable",
    ),
    (
        "basic-auth-half",
        [put(f"{PROM}.basic_auth_user_env", "PROM_USER")],
        f"{PROM}.basic_auth_password_env",
        "required key is missing",
    ),
    ("selector-without-braces", [put(f"{PROM}.selector", 'job="dcgm"')], f"{PROM}.selector", "in braces"),
    (
        "unknown-dcgm-field",
        [put(f"{PROM}.metric_names", {"DCGM_FI_PROF_SM_ACTIV": "sm"})],
        f"{PROM}.metric_names.DCGM_FI_PROF_SM_ACTIV",
        "did you mean 'DCGM_FI_PROF_SM_ACTIVE'?",
    ),
    (
        "bad-metric-name",
        [put(f"{PROM}.metric_names", {"DCGM_FI_PROF_SM_ACTIVE": "sm active"})],
        f"{PROM}.metric_names.DCGM_FI_PROF_SM_ACTIVE",
        "not a valid Prometheus metric name",
    ),
    # inventory
    ("hostlist-bad-range", [put(f"{NG0}.hosts", "gpu-[012-001]")], f"{NG0}.hosts", "invalid hostlist: bad range"),
    ("hostlist-unbalanced", [put(f"{NG0}.hosts", "gpu-[001-012")], f"{NG0}.hosts", "invalid hostlist: unbalanced"),
    ("hostlist-empty", [put(f"{NG0}.hosts", " ")], f"{NG0}.hosts", "names no hosts"),
    ("host-in-two-groups", [put(f"{NG1}.hosts", "gpu-[012-014]")], f"{NG1}.hosts", "gpu-012 already in node_groups[0]"),
    (
        "mig-profile-typo",
        [put(f"{NG1}.mig_layout[0]", "3g.40g")],
        f"{NG1}.mig_layout[0]",
        "unknown MIG profile '3g.40g'",
    ),
    (
        "mig-profile-eight-slices",
        [put(f"{NG1}.mig_layout", ["8g.80gb"])],
        f"{NG1}.mig_layout[0]",
        "unknown MIG profile",
    ),
    (
        "mig-weight-bad-profile",
        [put("rates.mig_profile_weights", {"2x.20gb": 0.3})],
        'rates.mig_profile_weights."2x.20gb"',
        "invalid key: unknown MIG profile",
    ),
    (
        "mig-layout-overfull",
        [put(f"{NG1}.mig_layout", ["4g.40gb", "3g.40gb", "1g.10gb"])],
        f"{NG1}.mig_layout",
        "uses 8 compute slices",
    ),
    (
        "mig-weights-over-one",
        [put("rates.mig_profile_weights", {"3g.40gb": 0.9})],
        f"{NG1}.mig_layout",
        "a GPU can count for at most 1.0",
    ),
    # mail and alerts
    ("smtp-address", [put("smtp.from_address", "Ops <ops@example.org>")], "smtp.from_address", "not an e-mail"),
    ("smtp-secret-in-file", [put("smtp.password_env", "hunter2!")], "smtp.password_env", "never the secret"),
    ("smtp-half-login", [drop("smtp.password_env")], "smtp.password_env", "needs both the user and the password"),
    ("smtp-port", [put("smtp.port", 70000)], "smtp.port", "less than or equal to 65535"),
    ("smtp-security", [put("smtp.security", "tls")], "smtp.security", "'starttls', 'ssl' or 'none'"),
    ("alerts-without-smtp", [drop("smtp")], "smtp", "[alerts] recipients need [smtp]"),
    ("alerts-nowhere", [put("alerts.recipients", [])], "alerts.recipients", "need recipients, or webhook_url_env"),
    ("alerts-recipient", [put("alerts.recipients", ["ops"])], "alerts.recipients[0]", "not an e-mail address"),
    ("alerts-ui-url", [put("alerts.ui_url", "dagster.example.org")], "alerts.ui_url", ""),
    # publication to PostgreSQL (the example's [publish] is commented out: publish_on switches it on)
    (
        "publish-secret-in-file",
        [publish_on, put("publish.password_env", "s3cret!")],
        "publish.password_env",
        "never the secret",
    ),
    ("publish-sslmode", [publish_on, put("publish.sslmode", "on")], "publish.sslmode", "'verify-ca' or 'verify-full'"),
    (
        "publish-schema",
        [publish_on, put("publish.target_schema", "Cardhours")],
        "publish.target_schema",
        "lowercase a-z",
    ),
    ("publish-marts-twice", [publish_on, put("publish.marts", ["fct_job_usage"] * 2)], "publish.marts", "named twice"),
    ("publish-marts-none", [publish_on, put("publish.marts", [])], "publish.marts", "leave the key out"),
    ("publish-no-host", [publish_on, drop("publish.host")], "publish.host", "required key is missing"),
    (
        "notices-without-smtp",
        [drop("smtp"), drop("alerts"), put("notices.enabled", True)],
        "smtp",
        "[notices] enabled = true sends through [smtp]",
    ),
    (
        "notices-no-address",
        [drop("notices.domain"), drop("notices.addresses_file")],
        "notices.addresses_file",
        "set addresses_file, or domain, or both",
    ),
    ("notices-domain-no-user", [put("notices.domain", "@example.org")], "notices.domain", "{user} exactly once"),
    ("notices-domain-bad", [put("notices.domain", "{user}")], "notices.domain", "does not make an e-mail address"),
    ("notices-period", [put("notices.period_days", 0)], "notices.period_days", "greater than 0"),
    (
        "notices-threshold",
        [put("notices.min_wasted_gpu_hours", -1.0)],
        "notices.min_wasted_gpu_hours",
        "greater than or equal to 0",
    ),
    ("notices-contact", [put("notices.contact", "help desk")], "notices.contact", "not an e-mail address"),
    ("notices-unknown-key", [put("notices.optout", ["bob"])], "notices.optout", ""),
    # rates and quotas
    ("currency-lowercase", [put("rates.currency", "eur")], "rates.currency", "3-letter uppercase ISO 4217"),
    ("currency-long", [put("rates.currency", "EURO")], "rates.currency", "ISO 4217"),
    ("gpu-model-without-rate", [drop("rates.gpu_hour.A100")], f"{NG1}.gpu_model", "no rate for gpu_model 'A100'"),
    (
        "quotas-over-capacity",
        [put("quotas.departments.nlp", 200)],
        "quotas.departments",
        "quotas sum to 248 GPUs, more than overcommit_ratio 1 x capacity 112",
    ),
]


@pytest.mark.parametrize(("changes", "key", "fragment"), [c[1:] for c in BROKEN], ids=[c[0] for c in BROKEN])
def test_broken_config_names_key_and_reason(changes, key: str, fragment: str) -> None:
    problems = problems_of(example(*changes))
    assert [p.key for p in problems] == [key]
    assert fragment in problems[0].reason
    with pytest.raises(ConfigError, match=re.escape(f"{SOURCE}: {key}: ")):
        parse_config(example(*changes), source=SOURCE)
