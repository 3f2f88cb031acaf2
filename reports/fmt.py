"""Number and text formatting for report cells: value -> plain text ("n/a" for no value).

Escaping happens where the text is placed: the page templates (``reports/templates``, autoescaped).
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import Any

NA = "n/a"


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and not math.isfinite(value))


def fmt_text(value: Any) -> str:
    return NA if value is None else str(value)


def fmt_int(value: Any) -> str:
    return NA if _missing(value) else f"{round(value):,}"


def fmt_float(value: Any, decimals: int = 1) -> str:
    return NA if _missing(value) else f"{value:,.{decimals}f}"


def fmt_trimmed(value: Any, decimals: int = 2) -> str:
    """1.0 -> "1", 0.375 -> "0.38": for counts that may be fractional (MIG GPUs)."""
    if _missing(value):
        return NA
    text = f"{value:,.{decimals}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def fmt_pct(ratio: Any, decimals: int = 1) -> str:
    """A 0-1 ratio as a percentage."""
    return NA if _missing(ratio) else f"{ratio * 100:,.{decimals}f}%"


def fmt_minutes(seconds: Any) -> str:
    return NA if _missing(seconds) else f"{seconds / 60:,.1f}"


def fmt_datetime(value: datetime | None) -> str:
    return NA if value is None else value.strftime("%Y-%m-%d %H:%M")
