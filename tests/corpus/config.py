"""Bad-input cases of config files: each is refused before any data is read, naming the key."""

from __future__ import annotations

from tests.corpus import Case
from tests.unit.config_cases import PROM, example, problems_of, put

SLURM = "clusters[0].slurm"


def refused(change, message: str):
    def check() -> None:
        assert [str(problem) for problem in problems_of(example(change))] == [message]

    return check


CASES: list[Case] = [
    Case(
        "config-url-with-credentials",
        "config",
        '`prometheus.url = "http://u:p@h:9090"`',
        "refused",
        "names `clusters[0].prometheus.url`; says credentials go in the named environment variables; prints "
        "the URL without them",
        refused(
            put(f"{PROM}.url", "http://u:p@h:9090"),
            "clusters[0].prometheus.url: must not carry credentials ('user:password@'): put them in environment "
            "variables and name those with bearer_token_env, or basic_auth_user_env and basic_auth_password_env "
            "(got 'http://h:9090', credentials removed)",
        ),
    ),
    Case(
        "config-secret-instead-of-env-name",
        "config",
        "`bearer_token_env` holding a token, not a variable name",
        "refused",
        "names the key; never the secret itself",
        refused(
            put(f"{PROM}.bearer_token_env", "lower-case"),
            "clusters[0].prometheus.bearer_token_env: must be the name of an environment variable (letters, "
            "digits, '_'), never the secret itself",
        ),
    ),
    Case(
        "config-sacct-share-above-one",
        "config",
        "`slurm.max_quarantine_share = 1.5`",
        "refused",
        "`clusters[0].slurm.max_quarantine_share: must be less than or equal to 1 (got 1.5)`",
        refused(
            put(f"{SLURM}.max_quarantine_share", 1.5),
            "clusters[0].slurm.max_quarantine_share: must be less than or equal to 1 (got 1.5)",
        ),
    ),
    Case(
        "config-sacct-output-unknown",
        "config",
        '`slurm.sacct_output = "xml"`',
        "refused",
        "`clusters[0].slurm.sacct_output: must be 'parsable2' or 'json' (got 'xml')`",
        refused(
            put(f"{SLURM}.sacct_output", "xml"),
            "clusters[0].slurm.sacct_output: must be 'parsable2' or 'json' (got 'xml')",
        ),
    ),
    Case(
        "config-two-sacct-modes",
        "config",
        "both `sacct_command` and `sacct_file`",
        "refused",
        "`clusters[0].slurm: set exactly one of sacct_command (command mode) or sacct_file (file mode); both are set`",
        refused(
            put(f"{SLURM}.sacct_file", "x.txt"),
            "clusters[0].slurm: set exactly one of sacct_command (command mode) or sacct_file (file mode); "
            "both are set",
        ),
    ),
    Case(
        "config-unknown-key",
        "config",
        "a misspelt key in a cluster",
        "refused",
        "names the key and the valid ones",
        refused(
            put("clusters[0].bogus", 1),
            "clusters[0].bogus: unknown key (valid keys: name, metrics, prometheus, slurm, kubernetes, inventory)",
        ),
    ),
    Case(
        "config-negative-dcgm-share",
        "config",
        "`metrics.max_quarantine_share = -0.1`",
        "refused",
        "`clusters[0].metrics.max_quarantine_share: must be greater than or equal to 0 (got -0.1)`",
        refused(
            put("clusters[0].metrics.max_quarantine_share", -0.1),
            "clusters[0].metrics.max_quarantine_share: must be greater than or equal to 0 (got -0.1)",
        ),
    ),
    Case(
        "config-zero-gpus-per-shard",
        "config",
        "`metrics.gpus_per_shard = 0`",
        "refused",
        "`clusters[0].metrics.gpus_per_shard: must be greater than 0 (got 0)`",
        refused(
            put("clusters[0].metrics.gpus_per_shard", 0),
            "clusters[0].metrics.gpus_per_shard: must be greater than 0 (got 0)",
        ),
    ),
]
