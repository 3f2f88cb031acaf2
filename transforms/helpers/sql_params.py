"""Named parameters for long SQL texts: ``$name`` in the text, values by name; DuckDB gets ``?``
markers and a list in the order they appear (a marker used twice is bound twice)."""

from __future__ import annotations

import re
from collections.abc import Mapping

_NAMED = re.compile(r"\$([a-z_][a-z0-9_]*)\b")


def bind(text: str, values: Mapping[str, object]) -> tuple[str, list[object]]:
    """(``text`` with each ``$name`` replaced by ``?``, the values in the order of the markers)."""
    missing = sorted({name for name in _NAMED.findall(text) if name not in values})
    if missing:
        raise KeyError(f"SQL parameters without a value: {', '.join(missing)}")
    params: list[object] = []

    def marker(match: re.Match) -> str:
        params.append(values[match.group(1)])
        return "?"

    return _NAMED.sub(marker, text), params
