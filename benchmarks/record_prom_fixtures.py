"""Record real Prometheus 2.42 answers into tests/fixtures/prometheus/ for the unit tests.

    .venv/bin/python benchmarks/record_prom_fixtures.py

Back-fills ``EDGE_OM`` (edge-case values, both host label spellings, a MIG instance, a
series without a host, escaped label values) with the real promtool, starts the real
prometheus twice (default limits, and ``--query.max-samples=5`` for the refusal) and
stores each answer's body byte for byte as ``<name>.json``; ``index.json`` keeps the
request and HTTP status of each.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import requests

from cardhours.bench.prometheus_server import PrometheusServer, backfill

OUT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "prometheus"
T0 = 1772409600  # 2026-03-02T00:00:00Z
H100 = 'modelName="NVIDIA H100 80GB HBM3"'
SERIES = {
    "a": f'gpu="0",UUID="GPU-a",Hostname="node-1",{H100},hpc_job="17"',
    "b": f'gpu="1",UUID="GPU-b",hostname="node-2",{H100},exported_pod="trainer-0",odd="q\\"uote \\\\ back ü"',
    "c": 'gpu="0",UUID="GPU-c",Hostname="node.3",modelName="NVIDIA A100-SXM4-80GB",'
    'GPU_I_ID="1",GPU_I_PROFILE="3g.40gb"',
    "d": 'gpu="2",UUID="GPU-d"',
}
# (series, seconds, value text): sorted per series, no duplicates (promtool drops those silently).
SAMPLES = [
    ("a", "1772409600", "0.5"),
    ("a", "1772409615.123", "NaN"),
    ("a", "1772409630", "+Inf"),
    ("a", "1772409645.5", "-Inf"),
    ("a", "1772409660", "1e-07"),
    ("a", "1772409675", "123456789012345678901234"),
    ("a", "1772409690", "-0.0000012"),
    ("a", "1772409705.001", "0.1"),
    ("b", "1772409600", "4294967295"),
    ("b", "1772409615", "9223372036854775792"),
    ("b", "1772409630", "0"),
    ("c", "1772409600", "0.25"),
    ("c", "1772409660", "0.75"),
    ("d", "1772409600", "1.5e-300"),
    ("d", "1772409700", "1.7976931348623157e+308"),
]
EDGE_OF_MINUTE = [("1772409600", "1"), ("1772409659.999", "2"), ("1772409660", "10"), ("1772409719.999", "20")]
END = 1772409720  # every sample is before this
QUERIES = {  # name -> (path, params)
    "matrix_edge": (
        "/api/v1/query",
        {"query": f"DCGM_FI_PROF_SM_ACTIVE[{(END - T0) * 1000 + 1}ms]", "time": f"{END}.000"},
    ),
    "matrix_two_metrics": (
        "/api/v1/query",
        {"query": '{__name__=~"DCGM_FI_PROF_SM_ACTIVE|DCGM_FI_DEV_FB_USED"}[2m]', "time": f"{END}.000"},
    ),
    "matrix_empty": ("/api/v1/query", {"query": "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE[2m]", "time": f"{END}.000"}),
    "range_avg": (
        "/api/v1/query_range",
        {
            "query": 'avg_over_time(DCGM_FI_PROF_SM_ACTIVE{UUID="GPU-c"}[59999ms])',
            "start": f"{T0 + 59}.999",
            "end": f"{END - 1}.999",
            "step": "60.000",
        },
    ),
    "error_bad_data": ("/api/v1/query", {"query": "DCGM_FI_PROF_SM_ACTIVE[1h", "time": f"{END}.000"}),
    "series": ("/api/v1/series", {"match[]": "DCGM_FI_PROF_SM_ACTIVE", "start": f"{T0}.000", "end": f"{END}.000"}),
    "buildinfo": ("/api/v1/status/buildinfo", {}),
}
REFUSED = {"error_too_many_samples": QUERIES["matrix_edge"]}


def edge_openmetrics() -> str:
    lines = [
        "# HELP DCGM_FI_PROF_SM_ACTIVE The ratio of cycles an SM has at least 1 warp assigned.",
        "# TYPE DCGM_FI_PROF_SM_ACTIVE gauge",
    ]
    lines += [f"DCGM_FI_PROF_SM_ACTIVE{{{SERIES[s]}}} {value} {ts}" for s, ts, value in SAMPLES]
    lines += [
        "# HELP DCGM_FI_DEV_FB_USED Framebuffer memory used (in MiB).",
        "# TYPE DCGM_FI_DEV_FB_USED gauge",
        f"DCGM_FI_DEV_FB_USED{{{SERIES['a']}}} 40960 1772409660",
    ]
    # Samples 1 ms before minute boundaries: they tell closed from left-open range selectors.
    lines += ["# HELP DCGM_FI_DEV_POWER_USAGE Power draw (in W).", "# TYPE DCGM_FI_DEV_POWER_USAGE gauge"]
    lines += [
        f'DCGM_FI_DEV_POWER_USAGE{{gpu="3",UUID="GPU-e",Hostname="node-5"}} {value} {ts}'
        for ts, value in EDGE_OF_MINUTE
    ]
    return "\n".join(lines + ["# EOF"]) + "\n"


def record(url: str, queries: dict[str, tuple[str, dict[str, str]]], index: dict[str, dict]) -> None:
    session = requests.Session()
    for name, (path, params) in queries.items():
        answer = session.get(url + path, params=params, headers={"Accept-Encoding": "identity"}, timeout=30)
        (OUT / f"{name}.json").write_bytes(answer.content)
        index[name] = {"path": path, "params": params, "status": answer.status_code}


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    index: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "edge.om").write_text(edge_openmetrics())
        (OUT / "edge.om").write_text(edge_openmetrics())
        for name, extra, queries in (("default", [], QUERIES), ("tiny", ["--query.max-samples=5"], REFUSED)):
            backfill([root / "edge.om"], root / name / "data")
            with PrometheusServer(root / name / "data", root / name, extra_args=extra) as server:
                record(server.url, queries, index)
    (OUT / "index.json").write_text(json.dumps(index, indent=2, sort_keys=True) + "\n")
    print(f"recorded {len(index)} answers into {OUT}")


if __name__ == "__main__":
    main()
