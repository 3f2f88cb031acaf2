"""A figure's change against the previous month, as a reader sees it: the amount, an arrow, and
whether that is better or worse, in words as well as in colour (the page prints in grey)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

NO_PREVIOUS = "no previous month"
UP, DOWN, FLAT = "▲", "▼", "▬"
FLAT_SHARE = 0.005  # an amount within 0.5% of the previous month's is about the same
Better = Literal["up", "down", None]  # which direction is good news; None: neither
Kind = Literal["amount", "points", "minutes"]


@dataclass(frozen=True)
class Change:
    """``text``: "+1,204.5 (+3.1%)", "+2.4 pp", "-1.5 min" or ``NO_PREVIOUS``; ``arrow``: one of
    UP, DOWN, FLAT ("" without a previous value); ``tone``: "good", "bad" or "neutral" (CSS class
    and the word after the amount)."""

    text: str
    arrow: str = ""
    tone: str = "neutral"

    @property
    def verdict(self) -> str:
        return {"good": "better", "bad": "worse"}.get(self.tone, "")


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and not math.isfinite(value))


def _amount(change: float, before: float, fmt: Callable[[Any], str]) -> str:
    text = ("+" if change >= 0 else "-") + fmt(abs(change))
    if before == 0:
        return f"{text} (from 0)" if change else text
    return f"{text} ({change / abs(before) * 100:+.1f}%)"


def change(now: Any, before: Any, kind: Kind, better: Better, fmt: Callable[[Any], str] = str) -> Change:
    """``now`` against ``before`` (None: no previous month). ``kind``: "amount" (the difference
    in ``fmt`` and relative to ``before``), "points" (two 0-1 ratios, in percentage points),
    "minutes" (two durations in seconds; in hours from two hours on). A change that rounds to
    nothing, or an amount within ``FLAT_SHARE`` of the previous one, is flat (neither better nor worse)."""
    if _missing(before):
        return Change(NO_PREVIOUS)
    if _missing(now):
        return Change("n/a")
    diff = now - before
    if kind == "points":
        diff, text = diff * 100, f"{(now - before) * 100:+.1f} pp"
    elif kind == "minutes":
        hours = abs(diff) >= 7200
        text = f"{diff / 3600:+,.1f} h" if hours else f"{diff / 60:+,.1f} min"
        diff = diff / 60
    else:
        text = _amount(diff, before, fmt)
    if round(diff, 1) == 0:  # shown as nothing: never "-0.0"
        return Change("+" + text[1:] if text.startswith("-") else text, FLAT, "neutral")
    if kind == "amount" and before and abs(diff) < FLAT_SHARE * abs(before):
        return Change(text, FLAT, "neutral")
    arrow = UP if diff > 0 else DOWN
    if better is None:
        return Change(text, arrow, "neutral")
    good = (diff > 0) == (better == "up")
    return Change(text, arrow, "good" if good else "bad")
