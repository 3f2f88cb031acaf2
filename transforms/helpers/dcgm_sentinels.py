"""Which DCGM values are not measurements, and the quarantine rows that report them.

DCGM marks a missing or unreadable field with "blank" values (``dcgm_structs.h``):
``DCGM_INT32_BLANK`` 0x7ffffff0 and its kin ``NOT_FOUND`` +1, ``NOT_SUPPORTED`` +2,
``NOT_PERMISSIONED`` +3; the same for ``DCGM_INT64_BLANK`` 0x7ffffffffffffff0 and
``DCGM_FP64_BLANK`` 2**47. Prometheus carries every value as float64, where the four
INT64 kin all round to 2**63 (one entry below). 4294967295 and 18446744073709551615 are
unsigned -1 (uint32/uint64 "no value" in NVML and some exporters).

Bounds are inclusive; ratio fields get :data:`RATIO_SLACK` on both sides for float noise.

:func:`value_events` lists the rejected values of a frame (one row each), and
:func:`quarantine_rows` groups them into ``raw.quarantine`` rows per series, field and
reason (used by ``transforms.helpers.dcgm_quality``, which also reports restart duplicates here).
"""

from __future__ import annotations

import polars as pl

from contracts.schemas import LABEL_COLUMNS, QUARANTINE_SCHEMA
from contracts.signals import SIGNALS

# float64 value -> reason text
SENTINELS: dict[float, str] = {
    **{
        float(0x7FFFFFF0 + i): f"DCGM blank sentinel {0x7FFFFFF0 + i} (INT32 {kin})"
        for i, kin in enumerate(("BLANK", "NOT_FOUND", "NOT_SUPPORTED", "NOT_PERMISSIONED"))
    },
    float(0x7FFFFFFFFFFFFFF0): (
        f"DCGM blank sentinel {0x7FFFFFFFFFFFFFF0} (INT64 BLANK; its kin +1..+3 are the same float64)"
    ),
    **{
        float(2**47 + i): f"DCGM blank sentinel {2**47 + i} (FP64 {kin})"
        for i, kin in enumerate(("BLANK", "NOT_FOUND", "NOT_SUPPORTED", "NOT_PERMISSIONED"))
    },
    float(2**32 - 1): f"DCGM blank sentinel {2**32 - 1} (uint32 -1)",
    float(2**64 - 1): f"DCGM blank sentinel {2**64 - 1} (uint64 -1)",
}
SENTINEL_VALUES: list[float] = sorted(SENTINELS)
SERIES = ["cluster", *LABEL_COLUMNS]
EVENT = [*SERIES, "ts", "field", "value", "kind", "reason"]
K8S_LABELS = ("pod", "namespace", "container")

RATIO_FIELDS = tuple(signal.name for signal in SIGNALS if signal.unit == "ratio")
RATIO_SLACK = 1e-6
# raw column -> (lowest, highest) plausible value; None = unbounded on that side (contracts.signals)
BOUNDS: dict[str, tuple[float | None, float | None]] = {signal.name: (signal.low, signal.high) for signal in SIGNALS}


def value_limits(field: str) -> tuple[float | None, float | None]:
    """The accepted range of a raw value column, slack included (screening and the GX suite share it)."""
    low, high = BOUNDS[field]
    slack = RATIO_SLACK if field in RATIO_FIELDS else 0.0
    return (None if low is None else low - slack, None if high is None else high + slack)


def is_invalid(field: str) -> pl.Expr:
    """True where ``field`` holds a sentinel, NaN/inf or a value outside its bounds (null: False)."""
    value = pl.col(field)
    low, high = value_limits(field)
    bad = value.is_in(SENTINEL_VALUES) | ~value.is_finite()
    if low is not None:
        bad = bad | (value < low)
    if high is not None:
        bad = bad | (value > high)
    return bad.fill_null(False)


def problem(field: str) -> pl.Expr:
    """Per value of ``field``: "sentinel", "non_finite", "below", "above" or null (fine)."""
    value = pl.col(field)
    low, high = value_limits(field)
    kind = pl.when(value.is_in(SENTINEL_VALUES)).then(pl.lit("sentinel"))
    kind = kind.when(~value.is_finite()).then(pl.lit("non_finite"))
    if low is not None:
        kind = kind.when(value < low).then(pl.lit("below"))
    if high is not None:
        kind = kind.when(value > high).then(pl.lit("above"))
    return kind.otherwise(pl.lit(None, dtype=pl.String()))


def bound_text(value: float | None) -> str:
    """A bound as written in reasons: 1, 0, 3000 (no trailing .0)."""
    return "-" if value is None else f"{value:g}"


def value_events(rows: pl.DataFrame, fields: list[str], duplicate: str | None = None) -> list[pl.DataFrame]:
    """One frame per field: its flagged values in ``rows`` as ``EVENT`` rows.

    ``duplicate`` None: the values :func:`problem` flags (kind sentinel, non_finite, below,
    above; reason set for the first two, the others get theirs from the group's extreme).
    ``duplicate`` a reason: every non-null value, kind "duplicate".
    """
    out = []
    kind_now, value = pl.col("kind"), pl.col("value")
    sentinel = value.replace_strict(SENTINELS, default=None, return_dtype=pl.String())
    reason = pl.when(kind_now == "sentinel").then(sentinel)
    reason = reason.when(kind_now == "non_finite").then(pl.format("{} is not finite ({})", "field", value))
    reason = reason.when(kind_now == "duplicate").then(pl.lit(duplicate))
    for field in fields:
        this = problem(field) if duplicate is None else pl.lit("duplicate")
        picked = rows.select(*SERIES, "ts", pl.lit(field).alias("field"), value=pl.col(field), kind=this)
        picked = picked.filter(kind_now.is_not_null() & value.is_not_null())
        out.append(picked.with_columns(reason.otherwise(None).alias("reason")).select(EVENT))
    return out


def quarantine_rows(events: pl.DataFrame, partition_key: str, source: str) -> pl.DataFrame:
    """``QUARANTINE_SCHEMA`` rows: one per (series labels, field, kind, reason) of ``events``.

    ``n_rows`` = values in the group; ``location`` a readable series identity; ``payload``
    ``{"example_value", "extra_labels", "first_ts", "last_ts"}`` (the earliest value, NaN and
    inf as strings); sorted by cluster, location, reason, payload.
    """
    if events.is_empty():
        return pl.DataFrame(schema=QUARANTINE_SCHEMA)
    groups = events.group_by(*SERIES, "field", "kind", "reason").agg(
        pl.col("ts").min().alias("first_ts"),
        pl.col("ts").max().alias("last_ts"),
        pl.col("value").sort_by("ts").first().alias("example"),
        pl.col("value").min().alias("low"),
        pl.col("value").max().alias("high"),
        pl.len().alias("n_rows"),
    )
    bound = {side: {f: bound_text(BOUNDS[f][i]) for f in BOUNDS} for i, side in enumerate(("low", "high"))}
    reason = (
        pl.when(pl.col("kind") == "above")
        .then(pl.format("{} above {} (max {})", "field", pl.col("field").replace_strict(bound["high"]), "high"))
        .when(pl.col("kind") == "below")
        .then(pl.format("{} below {} (min {})", "field", pl.col("field").replace_strict(bound["low"]), "low"))
        .otherwise(pl.col("reason"))
    )

    def text(c):
        return pl.col(c).cast(pl.String()).fill_null("-")

    optional = [pl.when(pl.col(c).is_not_null()).then(pl.format(" {}={}", pl.lit(c), c)) for c in K8S_LABELS]
    always = map(text, ("hostname", "gpu", "uuid", "gpu_i_id", "hpc_job"))
    location = pl.concat_str(
        pl.format("hostname={} gpu={} uuid={} gpu_i_id={} hpc_job={}", *always),
        *optional,
        pl.format(" field={}", "field"),
        ignore_nulls=True,
    )
    example = pl.col("example").cast(pl.String())
    quoted = pl.concat_str(pl.lit('"'), example, pl.lit('"'))  # NaN/inf are not JSON numbers
    example = pl.when(pl.col("example").is_finite()).then(example).otherwise(quoted)

    def iso(c):
        return pl.col(c).dt.to_string("%Y-%m-%dT%H:%M:%S%.f").alias(c)

    rest = pl.struct(pl.col("extra_labels").fill_null("{}"), iso("first_ts"), iso("last_ts")).struct.json_encode()
    payload = pl.concat_str(pl.lit('{"example_value":'), example, pl.lit(","), rest.str.strip_prefix("{"))
    return (
        groups.select(
            "cluster",
            pl.lit(source).alias("source"),
            pl.lit(partition_key).alias("partition_key"),
            location.alias("location"),
            reason.alias("reason"),
            payload.alias("payload"),
            "n_rows",
        )
        .cast(QUARANTINE_SCHEMA)
        .sort("cluster", "location", "reason", "payload")
    )
