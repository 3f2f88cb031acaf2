"""The marts published to a real PostgreSQL: a simulated site over a month boundary (28 Feb and
1 Mar) built through Dagster with ``[publish]`` set, so the monthly job's ``publish/postgres``
asset publishes both months into a database owned by an ordinary role. Rows and sums equal the
warehouse's; ``cardhours publish`` again gives identical rows and leaves the other month alone; a
reader in another connection sees the whole old month or the whole new one, never a part; a wrong
password names its variable; a changed column stops the publication and says what to do."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from datetime import date, timedelta
from decimal import Decimal
from pathlib import Path

import duckdb
import pytest
from dagster import DagsterInstance

from config import load_config
from pipelines.assets.gate import GATE_STEP
from pipelines.definitions import build_definitions
from pipelines.landing import utc_now
from pipelines.publish import PUBLIC_MARTS, mart_name, publish
from simulate.run import simulate
from tests.support.postgres import PostgresServer
from warehouse import connect

pytestmark = [pytest.mark.integration, pytest.mark.slow]

CARDHOURS = str(Path(sys.executable).with_name("cardhours"))
T0, DAYS, MONTHS = date(2026, 2, 28), 2, (date(2026, 2, 1), date(2026, 3, 1))
DB, OWNER, PASSWORD, VARIABLE, SCHEMA = "marts", "bi_writer", "bi-writer-test", "CARDHOURS_TEST_PUBLISH_PW", "bi"
NUMERIC = ("DOUBLE", "BIGINT", "INTEGER", "SMALLINT", "DECIMAL")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory, postgres_server: PostgresServer):
    postgres_server.create_database(DB, OWNER, PASSWORD)
    sim = simulate(tmp_path_factory.mktemp("publish"), gpus=8, days=DAYS, start=T0, seed=5, step_seconds=120,
                   metrics_format="parquet", kube=True)  # fmt: skip
    with sim.config_path.open("a") as config:
        config.write(
            f'\n[publish]\nhost = "127.0.0.1"\nport = {postgres_server.port}\ndatabase = "{DB}"\nuser = "{OWNER}"\n'
            f'password_env = "{VARIABLE}"\nsslmode = "disable"\ntarget_schema = "{SCHEMA}"\n'
        )
    os.environ[VARIABLE] = PASSWORD
    try:
        _build(sim.config_path)
        yield {"config": sim.config_path, "pg": postgres_server, "settings": load_config(sim.config_path)}
    finally:
        os.environ.pop(VARIABLE, None)


def _build(config: Path) -> None:
    definitions = build_definitions(str(config))
    daily = definitions.resolve_job_def("daily_ingest")
    with DagsterInstance.ephemeral() as instance:
        for i in range(DAYS):
            day = (T0 + timedelta(days=i)).isoformat()
            assert daily.execute_in_process(partition_key=day, instance=instance).success
        gate = {"ops": {GATE_STEP: {"config": {"accept_gaps": "the site serves one day of each month"}}}}
        for month in MONTHS:
            monthly = definitions.resolve_job_def("monthly_review")
            result = monthly.execute_in_process(partition_key=str(month), instance=instance, run_config=gate)
            assert result.success
            published = result.asset_materializations_for_node("publish__postgres")[0].metadata
            assert published["published"].value is True and "schema bi" in published["target"].value


def _warehouse(site) -> duckdb.DuckDBPyConnection:
    return connect(site["settings"].warehouse.path, read_only=True)


def _pg(site, text: str, params: tuple = ()) -> list[tuple]:
    return site["pg"].query(text, params, dbname=DB)


def _fingerprint(site, table: str, period: str, month: date) -> tuple:
    """Rows and an md5 of every row (as text, sorted) of ``month`` in the published table."""
    # Identifiers from the declared public marts; the month is bound.
    rows = "count(*), md5(string_agg(t::text, E'\\n' ORDER BY t::text))"
    text = f"SELECT {rows} FROM {SCHEMA}.{table} t WHERE {period} = %s"
    return _pg(site, text, (month,))[0]


def _fingerprints(site) -> dict:
    return {(mart_name(t), m): _fingerprint(site, mart_name(t), t.period, m) for t in PUBLIC_MARTS for m in MONTHS}


def _bookkeeping(site) -> dict:
    rows = _pg(
        site, f"SELECT table_name, month, rows, published_at, source_digest FROM {SCHEMA}.cardhours_publications"
    )
    return {(name, month): (count, at, digest) for name, month, count, at, digest in rows}


def _publish_cli(site, month: str, env: dict | None = None) -> subprocess.CompletedProcess:
    command = [CARDHOURS, "publish", "--month", month, "--config", str(site["config"])]
    environment = {**os.environ, "COLUMNS": "300", **(env or {})}
    return subprocess.run(command, capture_output=True, text=True, timeout=300, env=environment)


def test_the_monthly_build_published_every_public_mart_with_the_warehouse_rows_and_sums(site) -> None:
    assert set(_bookkeeping(site)) == {(mart_name(t), m) for t in PUBLIC_MARTS for m in MONTHS}
    with _warehouse(site) as duck:
        for table in PUBLIC_MARTS:
            columns = duck.execute(
                "SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = 'marts' "
                "AND table_name = ? ORDER BY ordinal_position",
                [mart_name(table)],
            ).fetchall()
            measures = [name for name, kind in columns if kind.startswith(NUMERIC)]
            flags = [name for name, kind in columns if kind == "BOOLEAN"]
            select = ", ".join(
                ["count(*)", *(f'sum("{c}")' for c in measures), *(f'count(*) FILTER (WHERE "{c}")' for c in flags)]
            )
            for month in MONTHS:
                where = f"WHERE {table.period} = ?"
                expected = duck.execute(f"SELECT {select} FROM {table.name} {where}", [month]).fetchone()
                got = _pg(
                    site, f"SELECT {select} FROM {SCHEMA}.{mart_name(table)} {where.replace('?', '%s')}", (month,)
                )[0]
                assert got[0] == expected[0], f"{table.name} {month}: {got[0]} rows published, {expected[0]} in DuckDB"
                for name, want, have in zip(["rows", *measures, *flags], expected, got, strict=True):
                    if isinstance(want, float):
                        assert float(have) == pytest.approx(want, rel=1e-9, abs=1e-9), f"{table.name}.{name} {month}"
                    else:
                        assert (None if have is None else Decimal(have)) == (None if want is None else Decimal(want)), (
                            f"{table.name}.{name} {month}"
                        )
    usage = {t for t in PUBLIC_MARTS if mart_name(t) == "fct_job_usage"}.pop()
    assert _fingerprint(site, "fct_job_usage", usage.period, MONTHS[1])[0] > 0, "the simulated March has jobs"
    column = (
        "SELECT col_description(attrelid, attnum), format_type(atttypid, atttypmod) FROM pg_attribute "
        "WHERE attrelid = %s::regclass AND attname = %s"
    )
    comment, _ = _pg(site, column, (f"{SCHEMA}.fct_job_usage", "gpu_hours"))[0]
    kind = [row[1] for row in _pg(site, column, (f"{SCHEMA}.fct_chargeback_jobs", "cost"))]
    assert comment and "card-hours" in comment and kind == ["numeric(18,2)"]


def test_a_rerun_gives_identical_rows_and_leaves_the_other_month_alone(site) -> None:
    rows, books = _fingerprints(site), _bookkeeping(site)
    done = _publish_cli(site, "2026-03")
    assert done.returncode == 0, done.stdout + done.stderr
    port = site["pg"].port
    assert f"publishing 2026-03 to postgresql://{OWNER}@127.0.0.1:{port}/{DB} schema {SCHEMA}" in done.stdout
    assert f"published {len(PUBLIC_MARTS)} tables" in done.stdout and f"{SCHEMA}.fct_job_usage: " in done.stdout
    assert _fingerprints(site) == rows
    after = _bookkeeping(site)
    for key, (count, at, digest) in after.items():
        if key[1] == MONTHS[1]:
            assert (count, digest) == (books[key][0], books[key][2]) and at > books[key][1], key
        else:
            assert (count, at, digest) == books[key], f"{key}: the other month changed"


def test_a_reader_sees_the_whole_old_month_or_the_whole_new_one_never_a_part(site) -> None:
    month = MONTHS[1]
    probe = (
        f"SELECT (SELECT count(*) FROM {SCHEMA}.fct_gpu_hourly WHERE month = %s), "
        f"(SELECT count(*) FROM {SCHEMA}.fct_job_usage WHERE month = %s), "
        f"(SELECT count(*) FROM {SCHEMA}.fct_chargeback_jobs WHERE charge_month = %s)"
    )
    whole = _pg(site, probe, (month,) * 3)[0]
    assert min(whole) > 0
    seen: list[tuple] = []
    stop = threading.Event()

    def read() -> None:
        conn = site["pg"].connect(DB)
        try:
            with conn.cursor() as cursor:
                while not stop.is_set():
                    cursor.execute(probe, (month,) * 3)
                    seen.append(cursor.fetchone())
        finally:
            conn.close()

    inside: list[tuple] = []  # read from another connection after each table's rows were replaced, before the commit
    reader = threading.Thread(target=read)
    reader.start()
    try:
        with _warehouse(site) as duck:
            for _ in range(2):
                publish(
                    duck,
                    site["settings"].publish,
                    month,
                    utc_now(),
                    lambda _line: inside.append(_pg(site, probe, (month,) * 3)[0]),
                )
    finally:
        stop.set()
        reader.join(timeout=60)
    assert len(inside) == 2 * len(PUBLIC_MARTS) and len(seen) > 10
    assert set(inside) == {whole} and set(seen) == {whole}


def test_a_wrong_or_missing_password_names_the_variable(site) -> None:
    books = _bookkeeping(site)
    wrong = _publish_cli(site, "2026-03", {VARIABLE: "not-the-password"})
    assert wrong.returncode == 1
    assert f"refused the password of user {OWNER} taken from {VARIABLE}" in " ".join(wrong.stderr.split())
    missing = _publish_cli(site, "2026-03", {VARIABLE: ""})
    assert missing.returncode == 1 and f"{VARIABLE}, which is not set" in " ".join(missing.stderr.split())
    assert _bookkeeping(site) == books


def test_the_documented_dashboard_queries_run_on_the_published_tables(site) -> None:
    doc = (Path(__file__).parents[2] / "docs" / "publish.md").read_text()
    hourly = doc.split("```sql\n")[2].split("```", 1)[0]
    assert "$__timeFilter(hour)" in hourly
    rows = _pg(site, hourly.replace("$__timeFilter(hour)", "TRUE").replace("cardhours.", f"{SCHEMA}."))
    assert len(rows) >= DAYS * 24 and all(
        0 <= (active or 0) <= allocated + 1e-9 <= 1 + 2e-9 for _, allocated, active in rows
    )
    monthly = doc.split("Idle GPU-hours per department and month: `", 1)[1].split("`\n", 1)[0]
    departments = _pg(site, " ".join(monthly.split()).replace("cardhours.", f"{SCHEMA}."))
    assert {month for month, _, _ in departments} == set(MONTHS) and all(idle >= 0 for *_, idle in departments)


def test_a_changed_column_stops_the_publication_and_its_advice_works(site) -> None:
    rows, books = _fingerprints(site), _bookkeeping(site)
    owner = site["pg"].connect(DB)
    owner.cursor().execute(f"SET ROLE {OWNER}; ALTER TABLE {SCHEMA}.mart_cluster_monthly DROP COLUMN sample_coverage")
    done = _publish_cli(site, "2026-03")
    message = " ".join(done.stderr.split())
    assert done.returncode == 1, done.stdout
    assert "mart_cluster_monthly no longer matches marts.mart_cluster_monthly" in message
    assert "column sample_coverage (double precision) is new in the mart" in message
    assert "Nothing was published" in message and "published before: 2026-02, 2026-03" in message
    assert _bookkeeping(site) == books, "a refused publication changes nothing"
    advice = message.split("drop it (", 1)[1].split(") and publish", 1)[0]
    owner.cursor().execute(advice)
    owner.close()
    for month in ("2026-02", "2026-03"):
        assert _publish_cli(site, month).returncode == 0
    assert _fingerprints(site) == rows
