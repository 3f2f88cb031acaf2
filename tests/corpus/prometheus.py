"""Bad or odd Prometheus HTTP API answers and dcgm-exporter series, read as the raw_dcgm_samples
asset reads them: ``PrometheusMetricsSource.read_samples`` (census, planning, HTTP client,
decoding, label normalization, pivot) against a recorded-answer peer on 127.0.0.1
(``recorded_prometheus``), then ``screen_samples``, the ``quarantine_share`` check and, where
keys go missing, the blocking ``gx_raw_dcgm_samples`` suite.

Unless a case says otherwise one GPU (node-a, GPU-a, job 17) reports sm_active 0.5 and power
300 W every 15 s over 2026-03-02 00:00-00:30 UTC: 120 samples per series, 240 values (the
refusals read its sm_active only). Messages name the peer http://prometheus:9090.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import date, datetime

import polars as pl
import pytest

from pipelines.checks.gx_adapter import run_suite_on_frame
from pipelines.checks.quarantine import ClusterQuarantine, quarantine_share_check, values_by_reason
from pipelines.checks.suites import raw_dcgm_samples_suite
from sources.metrics import MetricsSourceError
from sources.prometheus import PrometheusMetricsSource
from tests.corpus import Case
from tests.corpus.recorded_prometheus import Answer, Recorded, Series, matrix, serving
from tests.fixtures.prom_config import prometheus_site_config
from transforms.helpers.dcgm_quality import ScreenResult, screen_samples

T0 = 1772409600  # 2026-03-02T00:00:00Z
DAY = date(2026, 3, 2)
START, END = datetime(2026, 3, 2), datetime(2026, 3, 2, 0, 30)
N = 120
SM, POWER = "DCGM_FI_PROF_SM_ACTIVE", "DCGM_FI_DEV_POWER_USAGE"
GPU = {"Hostname": "node-a", "UUID": "GPU-a", "gpu": "0", "modelName": "NVIDIA H200", "hpc_job": "17"}
URL = "http://prometheus:9090"  # how the cases name the recorded peer
DECODER = "auto"  # the reader's decoder (tests/unit/test_prom_decoders.py runs the cases with pyarrow too)
WINDOW = "window [2026-03-02T00:00:00.000Z, 2026-03-02T00:30:00.000Z)"
QUERY = f"{URL}/api/v1/query for query '{SM}[1800001ms]' {WINDOW}"


def gpu(
    metric: str, value: str = "0.5", odd: dict[int, str] | None = None, first: int = 0, n: int = N, **labels: str | None
) -> Series:
    """``n`` samples every 15 s from the ``first``-th of the window, ``value`` except where ``odd`` says;
    ``labels`` override GPU's (None drops one)."""
    merged = {k: v for k, v in {"__name__": metric, **GPU, **labels}.items() if v is not None}
    return Series(merged, [(T0 + 15 * i, (odd or {}).get(i, value)) for i in range(first, first + n)])


def both(sm: dict[int, str] | None = None, power: dict[int, str] | None = None, **labels: str | None) -> list[Series]:
    return [gpu(SM, "0.5", sm, **labels), gpu(POWER, "300", power, **labels)]


def on_query(status: int, body: bytes) -> Answer:
    """Answer every data request (not the census) with ``status`` and ``body``."""
    return lambda path, query: (status, body) if path == "/api/v1/query" else None


def read(
    series: list[Series], answer: Answer | None = None, end: datetime = END, **prometheus: object
) -> tuple[pl.DataFrame, dict, float]:
    """(samples as read_samples returns them, the read report, the cluster's max quarantine share)."""
    with serving(Recorded(series, answer or (lambda path, query: None))) as url:
        cluster = prometheus_site_config(url, scrape_interval_seconds=15, **prometheus).cluster("it")
        source = PrometheusMetricsSource.from_config(cluster, decoder=DECODER)
        try:
            frame = source.read_samples("it", START, end)
        except MetricsSourceError as exc:
            notes = "".join(f"; {note}" for note in getattr(exc, "__notes__", []))
            raise MetricsSourceError(str(exc).replace(url, URL) + notes) from exc
        return frame, source.last_report.summary(), cluster.metrics.max_quarantine_share


def ingest(series: list[Series], **options: object) -> tuple[ScreenResult, object]:
    """The asset's steps: read, screen, judge the quarantine share."""
    frame, _, max_share = read(series, **options)
    result = screen_samples(frame, partition_key=DAY.isoformat())
    outcome = ClusterQuarantine("it", DAY.isoformat(), result.counts, max_share, values_by_reason(result.quarantine))
    return result, quarantine_share_check([outcome], ["raw", "dcgm_samples"])


def values(result: ScreenResult, field: str) -> list:
    return result.clean.get_column(field).to_list()


def refused(
    id: str, input: str, series: list[Series], message: str, answer: Answer | None = None, **options: object
) -> Case:
    def check() -> None:
        with pytest.raises(MetricsSourceError) as caught:
            read(series, answer, **options)
        assert str(caught.value) == message, str(caught.value)

    return Case(id, "prometheus", input, "refused", "read fails: " + message.replace("|", "\\|"), check)


def quarantined(
    id: str,
    input: str,
    series: list[Series],
    reasons: list[tuple[str, str, int]],
    of: int,
    rest: str,
    also: Callable[[ScreenResult], None],
) -> Case:
    """Values quarantined as ``reasons`` (field, reason, values) of ``of``; the day passes its share check."""
    listed = "; ".join(f"{field}: '{reason}' x{n}" for field, reason, n in reasons)
    total = sum(n for _, _, n in reasons)

    def check() -> None:
        result, share = ingest(series)
        got = [
            (loc.rsplit("field=", 1)[1], reason, n)
            for loc, reason, n in result.quarantine.select("location", "reason", "n_rows").rows()
        ]
        assert sorted(got) == sorted(reasons) and result.counts["input_values"] == of and share.passed
        also(result)

    expected = f"{total} of {of} values quarantined ({listed}); {rest}; the day passes quarantine_share (limit 1 %)"
    return Case(id, "prometheus", input, "quarantined", expected, check)


def nulls(**indexes: list[int]) -> Callable[[ScreenResult], None]:
    """The window's 120 rows are kept; each field is null exactly at these sample indexes."""

    def check(result: ScreenResult) -> None:
        assert result.clean.height == N
        for field, at in indexes.items():
            assert [i for i, v in enumerate(values(result, field)) if v is None] == at

    return check


def gx_nulls(column: str, label: str) -> Callable[[], None]:
    """A second GPU without ``label``: screened as usual, then the blocking suite fails on ``column``."""

    def check() -> None:
        result, share = ingest([*both(), *both(**{"UUID": "GPU-b", "gpu": "1", label: None})])
        gx = run_suite_on_frame(raw_dcgm_samples_suite(), result.clean, ["raw", "dcgm_samples"], "gx_raw_dcgm_samples")
        failed = [(f["expectation"], f["unexpected_count"]) for f in gx.metadata["failed_expectations"].value]
        assert share.passed and result.quarantine.is_empty() and result.clean.height == 2 * N and not gx.passed
        assert failed == [(f"expect_column_values_to_not_be_null({column})", N)]

    return check


TOO_MANY = (
    b'{"status":"error","errorType":"execution","error":"query processing would load too many samples into '
    b'memory in query execution"}'
)
HOSTS = ("node-a", "node-b", "node-c")


def check_split() -> None:
    asked: list[str] = []

    def refuse_whole_cluster(path: str, query: str) -> tuple[int, bytes] | None:
        if path != "/api/v1/query":
            return None
        asked.append(query)
        return None if "=~" in query else (422, TOO_MANY)

    frame, report, _ = read([gpu(SM, Hostname=h, UUID=f"GPU-{h}") for h in HOSTS], refuse_whole_cluster)
    assert sorted(asked) == [
        f"{SM}[1800001ms]",
        f'{SM}{{Hostname=~"node-a|node-b"}}[1800001ms]',
        f'{SM}{{Hostname=~"node-c"}}[1800001ms]',
    ]
    assert (report["requests_refused_and_split"], report["requests_answered"], report["host_shards_answered"]) == (
        1,
        2,
        2,
    )
    assert frame.height == 3 * N and frame.group_by("hostname").len().sort("hostname")["len"].to_list() == [N] * 3


def check_retried() -> None:
    calls: list[str] = []

    def unavailable_once(path: str, query: str) -> tuple[int, bytes] | None:
        if path == "/api/v1/query" and query.startswith(SM):
            calls.append(query)
            return (503, b"upstream connect error or disconnect/reset before headers") if len(calls) == 1 else None
        return None

    result, share = ingest(both(), answer=unavailable_once)
    assert len(calls) == 2 and result.counts["input_values"] == 2 * N and values(result, "sm_active") == [0.5] * N


def check_outside_window() -> None:
    wide = gpu(SM, "0.5", first=-4, n=N + 6)  # 4 samples before 00:00, 2 at or after 00:30
    frame, _, _ = read([gpu(SM)], on_query(200, matrix([(wide.labels, wide.samples)])))
    assert frame.height == N and (frame["ts"].min(), frame["ts"].max()) == (START, datetime(2026, 3, 2, 0, 29, 45))


def check_mig() -> None:
    profile = {"GPU_I_PROFILE": "3g.40gb"}
    result, _ = ingest([*both(GPU_I_ID="1", **profile), *both(GPU_I_ID="2", hpc_job="18", **profile)])
    rows = result.clean.group_by("gpu_i_id", "hpc_job").agg(pl.col("sm_active").count(), pl.col("power_w").sum())
    assert sorted(rows.rows(), key=str) == [(1, "17", N, 0.0), (2, "18", N, 0.0), (None, None, 0, 300.0 * N)]
    assert (result.counts["mig_device_rows"], result.counts["mig_device_values_moved"]) == (N, 2 * N)
    assert result.quarantine.is_empty()


def check_labels(series: list[Series], want: dict[str, object]) -> Callable[[], None]:
    def check() -> None:
        result, _ = ingest(series)
        assert result.clean.height == N and result.quarantine.is_empty()
        for column, value in want.items():
            assert set(values(result, column)) == {value}, (column, set(values(result, column)))

    return check


def check_renamed() -> None:
    stray = gpu(SM, "0.9", Hostname="node-z", UUID="GPU-z")
    frame, report, _ = read([gpu("dcgm_sm_active"), stray], metric_names={SM: "dcgm_sm_active"})
    assert report["fields_present"] == [SM] and frame.height == N and set(frame["uuid"]) == {"GPU-a"}
    assert frame["sm_active"].to_list() == [0.5] * N


def check_slack(result: ScreenResult) -> None:
    nulls(sm_active=[30])(result)
    assert values(result, "sm_active")[31] == 1.0000005


def check_restart(result: ScreenResult) -> None:
    kept = result.clean.sort("ts")
    assert kept["sm_active"].to_list() == [0.5] * 61 + [0.6] * 59 and kept["ts"].n_unique() == N
    assert kept["extra_labels"][60] == '{"instance":"10.0.0.1:9400"}'


OVER_SHARE = (
    "cluster 'it', day 2026-03-02: 50.0000% of sample values quarantined (120 of 240), over "
    f"metrics.max_quarantine_share 1.0000%; biggest reasons: DCGM blank sentinel {2**47 + 2} "
    "(FP64 NOT_SUPPORTED) (120 values)"
)


def check_over_share() -> None:
    result, share = ingest([gpu(SM), gpu(POWER, str(2**47 + 2))])
    assert result.counts["sentinel_values"] == N and not share.passed and share.description == OVER_SHARE


EXPORTER = {
    "pod": "dcgm-exporter-x7k2p",
    "namespace": "gpu-operator",
    "container": "nvidia-dcgm-exporter",
    "job": "gpu-metrics",
}
WORKLOAD = {"exported_pod": "train-0", "exported_namespace": "ml", "exported_container": "trainer"}
EXTRA = (
    '{"container":"nvidia-dcgm-exporter","job":"gpu-metrics","namespace":"gpu-operator","pod":"dcgm-exporter-x7k2p"}'
)
FP64_BLANK, NOT_SUPPORTED = str(2**47), str(2**47 + 2)

CASES: list[Case] = [
    refused(
        "prom-bad-query-400",
        'HTTP 400 {"status":"error","errorType":"bad_data","error":"invalid parameter ..."}',
        [gpu(SM)],
        f"Prometheus request failed after 1 attempt(s): {URL}/api/v1/query query '{SM}[1800001ms]' "
        f'{WINDOW}: HTTP 400: bad_data: invalid parameter "query": 1:26: parse error: unclosed left bracket',
        on_query(
            400,
            b'{"status":"error","errorType":"bad_data","error":"invalid parameter \\"query\\": '
            b'1:26: parse error: unclosed left bracket"}',
        ),
    ),
    refused(
        "prom-error-status-in-200",
        'HTTP 200 whose body is {"status":"error","errorType":"execution",...}',
        [gpu(SM)],
        f"undecodable answer from {QUERY}: server error execution: query timed out in expression evaluation",
        on_query(200, b'{"status":"error","errorType":"execution","error":"query timed out in expression evaluation"}'),
    ),
    refused(
        "prom-is-partial",
        'VictoriaMetrics cluster answer with "isPartial":true (a storage node down)',
        [gpu(SM)],
        f"undecodable answer from {QUERY}: server answered isPartial: true (some of its storage nodes did not "
        "answer): the data may be incomplete",
        on_query(200, b'{"status":"success","isPartial":true,"data":{"resultType":"matrix","result":[]}}'),
    ),
    refused(
        "prom-partial-response-warnings",
        'Thanos answer with "warnings" (a store did not answer)',
        [gpu(SM)],
        f"undecodable answer from {QUERY}: server returned warnings (the data may be partial): "
        "['store 10.0.3.7:10901: rpc error: code = Unavailable']",
        on_query(
            200,
            b'{"status":"success","warnings":["store 10.0.3.7:10901: rpc error: code = Unavailable"],'
            b'"data":{"resultType":"matrix","result":[]}}',
        ),
    ),
    Case(
        "prom-too-many-samples-split",
        "prometheus",
        "HTTP 422 'query processing would load too many samples' for the 3-host request, host shards answered",
        "billed",
        'the refused request is split into {Hostname=~"node-a\\|node-b"} and {Hostname=~"node-c"}, both answered: '
        "360 samples of 3 GPUs, each once (read report: 1 refused and split, 2 answered, 2 host shards)",
        check_split,
    ),
    refused(
        "prom-too-many-samples-one-host",
        "HTTP 422 too many samples for one host over one scrape interval (window 00:00-00:00:15)",
        [gpu(SM)],
        "Prometheus request failed after 1 attempt(s): "
        f"{URL}/api/v1/query query '{SM}[15001ms]' window [2026-03-02T00:00:00.000Z, 2026-03-02T00:00:15.000Z): "
        "HTTP 422: execution: query processing would load too many samples into memory in query execution; "
        f"cardhours cannot make this request smaller: cannot split {SM} [1772409600000, 1772409615000) any further "
        "(one host, 15000 ms)",
        lambda path, query: (422, TOO_MANY) if path == "/api/v1/query" else None,
        end=datetime(2026, 3, 2, 0, 0, 15),
    ),
    refused(
        "prom-login-page-instead-of-json",
        "HTTP 200 with a single-sign-on proxy's text page 'Sign in to continue: https://sso.example.org/login'",
        [gpu(SM)],
        f"undecodable answer from {QUERY}: response is "
        "not JSON (Expecting value: line 1 column 1 (char 0)): b'Sign in to continue: https://sso.example.org/login'",
        on_query(200, b"Sign in to continue: https://sso.example.org/login"),
    ),
    refused(
        "prom-body-cut-short",
        "HTTP 200 matrix answer cut off inside a values list (a proxy's size limit)",
        [gpu(SM)],
        f"undecodable answer from {QUERY}: response is not JSON (Expecting ',' delimiter: line 1 column 159 "
        "(char 158)): b'" + '{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"UUID":'
        '"GPU-a","__name__":"DCGM_FI_PROF_SM_ACTIVE"},"values":[[1772409600,"0.5"],[17724' + "'",
        on_query(
            200,
            b'{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"UUID":"GPU-a",'
            b'"__name__":"DCGM_FI_PROF_SM_ACTIVE"},"values":[[1772409600,"0.5"],[17724',
        ),
    ),
    Case(
        "prom-unavailable-then-answered",
        "prometheus",
        "HTTP 503 'upstream connect error' once, then the answer",
        "billed",
        "retried after a backoff and read: all 240 values billed, none twice",
        check_retried,
    ),
    quarantined(
        "prom-nan-and-inf",
        'sm_active "NaN" at 00:02:30, power "+Inf" at 00:05:00',
        both({10: "NaN"}, {20: "+Inf"}),
        [("sm_active", "sm_active is not finite (NaN)", 1), ("power_w", "power_w is not finite (inf)", 1)],
        2 * N,
        "both sample rows kept with that field null",
        nulls(sm_active=[10], power_w=[20]),
    ),
    quarantined(
        "prom-dcgm-blank-sentinels",
        f"power 4294967295 at 00:01:15, sm_active {FP64_BLANK} (DCGM FP64 blank) at 00:02:00",
        both({8: FP64_BLANK}, {5: "4294967295"}),
        [
            ("power_w", "DCGM blank sentinel 4294967295 (uint32 -1)", 1),
            ("sm_active", f"DCGM blank sentinel {FP64_BLANK} (FP64 BLANK)", 1),
        ],
        2 * N,
        "the sample rows kept with that field null",
        nulls(power_w=[5], sm_active=[8]),
    ),
    quarantined(
        "prom-ratio-above-one",
        "sm_active 1.7 at 00:07:30 and 1.0000005 at 00:07:45",
        both({30: "1.7", 31: "1.0000005"}),
        [("sm_active", "sm_active above 1 (max 1.7)", 1)],
        2 * N,
        "1.0000005 is within the 1e-06 float slack and billed as read",
        check_slack,
    ),
    quarantined(
        "prom-exporter-restart-duplicates",
        "exporter restarted: instance 10.0.0.1:9400 until 00:15:00, "
        "10.0.0.2:9400 from 00:15:00, both scraped at 00:15:00 (same UUID)",
        [gpu(m, v, n=61, instance="10.0.0.1:9400") for m, v in ((SM, "0.5"), (POWER, "300"))]
        + [gpu(m, v, first=60, n=60, instance="10.0.0.2:9400") for m, v in ((SM, "0.6"), (POWER, "310"))],
        [
            ("sm_active", "duplicate series after exporter restart", 1),
            ("power_w", "duplicate series after exporter restart", 1),
        ],
        242,
        "at 00:15:00 the longer series (10.0.0.1, 61 samples) is kept: one row per timestamp, 120 rows",
        check_restart,
    ),
    Case(
        "prom-power-sentinel-everywhere",
        "prometheus",
        f"every power sample is {NOT_SUPPORTED} (DCGM FP64 NOT_SUPPORTED)",
        "refused",
        f"120 of 240 values quarantined; the blocking quarantine_share check fails: {OVER_SHARE}",
        check_over_share,
    ),
    Case(
        "prom-series-without-uuid",
        "prometheus",
        "a second GPU's series carry no UUID label",
        "refused",
        "read and screened (never merged as a restart duplicate); the blocking gx_raw_dcgm_samples check fails: "
        "expect_column_values_to_not_be_null(uuid), 120 rows",
        gx_nulls("uuid", "UUID"),
    ),
    Case(
        "prom-series-without-hostname",
        "prometheus",
        "a second GPU's series carry neither Hostname nor hostname",
        "refused",
        "read and screened; the blocking gx_raw_dcgm_samples check fails: "
        "expect_column_values_to_not_be_null(hostname), 120 rows",
        gx_nulls("hostname", "Hostname"),
    ),
    Case(
        "prom-mig-device-fields",
        "prometheus",
        "MIG GPU: instances GPU_I_ID 1 and 2 (GPU_I_PROFILE 3g.40gb, jobs 17 "
        "and 18) each report sm_active and the whole GPU's 300 W",
        "repaired",
        "sm_active stays on each instance's 120 rows; power moves to 120 device rows (no instance, no job): 300 W "
        "once per timestamp, not 600; nothing quarantined",
        check_mig,
    ),
    Case(
        "prom-empty-hpc-job",
        "prometheus",
        'series labelled hpc_job=""',
        "repaired",
        "hpc_job null on all 120 rows (an empty label is an absent one): the GPU time is billed to no job",
        check_labels(both(hpc_job=""), {"hpc_job": None}),
    ),
    Case(
        "prom-samples-outside-window",
        "prometheus",
        "an answer that also holds 4 samples before 00:00 and 2 at or after 00:30",
        "billed",
        "the 6 samples outside [00:00, 00:30) are dropped; the 120 inside read once",
        check_outside_window,
    ),
    Case(
        "prom-metric-renamed-by-site",
        "prometheus",
        "site metric dcgm_sm_active (metric_names.DCGM_FI_PROF_SM_ACTIVE) "
        "next to a stray DCGM_FI_PROF_SM_ACTIVE series",
        "billed",
        "dcgm_sm_active is read as sm_active (120 samples of GPU-a); the stray series is not read",
        check_renamed,
    ),
    refused(
        "prom-answer-for-another-metric",
        "the answer to the sm_active query holds DCGM_FI_DEV_GPU_TEMP",
        [gpu(SM)],
        f"undecodable answer from {QUERY}: asked for {SM}, the answer has a series of DCGM_FI_DEV_GPU_TEMP",
        on_query(200, matrix([({**GPU, "__name__": "DCGM_FI_DEV_GPU_TEMP"}, [(T0, "41")])])),
    ),
    refused(
        "prom-series-twice-in-one-answer",
        "the answer lists GPU-a's series twice, same samples (a proxy merging two replicas without deduplication)",
        [gpu(SM)],
        f"cannot normalize dcgm-exporter series read from {URL}: a series "
        "has two samples at the same timestamp (samples must be unique per series and ts)",
        on_query(200, matrix([(gpu(SM).labels, gpu(SM).samples)] * 2)),
    ),
    refused(
        "prom-gpu-label-not-a-number",
        'gpu="GPU-0" (an index is expected)',
        [gpu(SM, gpu="GPU-0")],
        f"cannot normalize dcgm-exporter series read from {URL}: label gpu is not an Int16 on 1 series, e.g. "
        "[{'__name__': 'DCGM_FI_PROF_SM_ACTIVE', 'Hostname': 'node-a', 'UUID': 'GPU-a', 'gpu': 'GPU-0', "
        "'hpc_job': '17', 'modelName': 'NVIDIA H200'}]",
    ),
    Case(
        "prom-exported-workload-labels",
        "prometheus",
        "scraped with honor_labels false: exported_pod=train-0, "
        "exported_namespace=ml, pod=dcgm-exporter-x7k2p (the exporter)",
        "repaired",
        f"pod train-0, namespace ml, container trainer; the exporter's labels kept in extra_labels {EXTRA}",
        check_labels(
            both(**EXPORTER, **WORKLOAD),
            {"pod": "train-0", "namespace": "ml", "container": "trainer", "extra_labels": EXTRA},
        ),
    ),
    Case(
        "prom-hostname-label-renamed",
        "prometheus",
        "exporter upgrade: Hostname until 00:15:15, hostname from 00:15:00, equal values at the 2 shared timestamps",
        "repaired",
        "one label set: 120 rows, the shared timestamps once, nothing quarantined",
        check_labels([*both(n=62), *both(first=60, n=60, Hostname=None, hostname="node-a")], {"hostname": "node-a"}),
    ),
]
