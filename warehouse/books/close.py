"""``cardhours close``: freeze a billing month, only when it is complete, fresh and recomputes
to the cent (docs/chargeback.md, "Closed months").

Inside one transaction, under the warehouse lock the CLI holds: the month's conditions
(warehouse/books/close_conditions.py), the stored reconciliation flags, a recomputation of its rows
compared with the stored marts (warehouse/books/recompute.py), then the frozen, hash-chained ledger
rows (warehouse/books/ledger.py). Any blocker refuses the close; gaps refuse it unless a reason is
given, which is stored with the month. ``now`` is the caller's clock (it is also ``closed_at``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import date, datetime

import duckdb

from config import Config
from warehouse import first_row
from warehouse.books.close_conditions import month_conditions
from warehouse.books.ledger import (
    Closed,
    CloseError,
    closed_record,
    freeze_month,
    reconciliation_problems,
    seal_unchained,
)
from warehouse.books.recompute import recompute_problems
from warehouse.migrate import rollback_quietly

COVERAGE_NOTE = (
    "Coverage gaps (a source answered with nothing; listed, they do not block: missing samples count "
    "in the sample coverage):"
)


def refusal(month: date, blockers: list[str], gaps: list[str], coverage: Sequence[str] = ()) -> str:
    """The message of a refused close: what cannot be waived, then what ``--accept-gaps`` would
    accept, then the coverage gaps (listed: they do not block)."""
    lines = [f"{month:%Y-%m} is not closed."]
    if blockers:
        lines.append("Fix these, then close again (--accept-gaps does not override them):")
        lines += [f"  - {line}" for line in blockers]
    if gaps:
        lines.append(
            'Gaps: land or wait for them, or close anyway with --accept-gaps "reason" (stored with the month):'
        )
        lines += [f"  - {line}" for line in gaps]
    if coverage:
        lines.append(COVERAGE_NOTE)
        lines += [f"  - {line}" for line in coverage]
    return "\n".join(lines)


def _close(
    conn: duckdb.DuckDBPyConnection, config: Config, month: date, now: datetime, accept_gaps: str | None
) -> Closed:
    regular = first_row(
        conn,
        "SELECT count(*) FROM marts.fct_chargeback_focus WHERE billing_month = ? AND charge_month = ?",
        [month, month],
    )
    if not regular or not regular[0]:
        raise CloseError(
            f"no chargeback rows for {month:%Y-%m}: run the month first (cardhours run --month {month:%Y-%m})"
        )
    conditions = month_conditions(conn, config, month, now)
    blockers = [
        *conditions.blockers,
        *[f"does not reconcile: {p}" for p in reconciliation_problems(conn, month)],
        *[f"the stored marts differ from a recomputation: {p}" for p in recompute_problems(conn, config, month)],
    ]
    if blockers or (conditions.gaps and not accept_gaps):
        raise CloseError(refusal(month, blockers, conditions.gaps, conditions.coverage_gaps))
    sealed = seal_unchained(conn)
    reason = accept_gaps if conditions.gaps else None
    closed = freeze_month(conn, month, now, reason, conditions.gaps if reason else [])
    return replace(closed, sealed=tuple(sealed), coverage_gaps=tuple(conditions.coverage_gaps))


def close_month(
    conn: duckdb.DuckDBPyConnection, config: Config, month: date, now: datetime, accept_gaps: str | None = None
) -> Closed:
    """Freeze billing month ``month`` (its first day) at ``now`` (naive UTC). Closing a closed
    month changes nothing. Raises ``CloseError`` naming everything that stands in the way."""
    previous = closed_record(conn, month)
    if previous is not None:
        return previous
    reason = accept_gaps.strip() if accept_gaps else None
    conn.execute("BEGIN TRANSACTION")
    try:
        closed = _close(conn, config, month, now, reason or None)
        conn.execute("COMMIT")
    except BaseException:
        rollback_quietly(conn)
        raise
    return closed
