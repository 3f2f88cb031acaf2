"""Slurm hostlist expressions: ``gpu-[01-03,07]`` <-> ``["gpu-01", "gpu-02", "gpu-03", "gpu-07"]``.

Implements the subset Slurm prints in sacct ``NodeList`` and accepts in ``slurm.conf``:
several comma-separated items, each with at most one bracketed range group at the end
or in the middle (``rack1-node[1-4]-ib``), zero padding kept from the lower bound.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["HostlistError", "expand", "compress"]

_ITEM = re.compile(r"^(?P<prefix>[^\[\]]*)(?:\[(?P<ranges>[^\[\]]+)\](?P<suffix>[^\[\]]*))?$")
_TRAILING_NUMBER = re.compile(r"^(?P<prefix>.*?)(?P<num>\d+)$")


class HostlistError(ValueError):
    """A hostlist expression that cannot be parsed."""


def _split_top_level(expr: str) -> list[str]:
    """Split on commas that are not inside brackets."""
    items, depth, current = [], 0, []
    for ch in expr:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
            if depth < 0:
                raise HostlistError(f"unbalanced ']' in hostlist {expr!r}")
        if ch == "," and depth == 0:
            items.append("".join(current))
            current = []
        else:
            current.append(ch)
    if depth != 0:
        raise HostlistError(f"unbalanced '[' in hostlist {expr!r}")
    items.append("".join(current))
    return [i.strip() for i in items if i.strip()]


def _expand_ranges(ranges: str, expr: str) -> list[str]:
    out: list[str] = []
    for part in ranges.split(","):
        part = part.strip()
        if "-" in part:
            lo, hi = part.split("-", 1)
            if not (lo.isdigit() and hi.isdigit()) or int(hi) < int(lo):
                raise HostlistError(f"bad range {part!r} in hostlist {expr!r}")
            width = len(lo)
            out.extend(str(n).zfill(width) for n in range(int(lo), int(hi) + 1))
        elif part.isdigit():
            out.append(part)
        else:
            raise HostlistError(f"bad range {part!r} in hostlist {expr!r}")
    return out


def expand(expr: str | None) -> list[str]:
    """Expand a hostlist expression into host names, in order, duplicates kept out."""
    if expr is None:
        return []
    expr = expr.strip()
    if expr in ("", "None assigned", "(null)"):
        return []
    hosts: list[str] = []
    for item in _split_top_level(expr):
        match = _ITEM.match(item)
        if not match:
            raise HostlistError(f"cannot parse hostlist item {item!r} in {expr!r}")
        if match.group("ranges") is None:
            hosts.append(item)
            continue
        prefix, suffix = match.group("prefix"), match.group("suffix")
        hosts.extend(f"{prefix}{n}{suffix}" for n in _expand_ranges(match.group("ranges"), expr))
    seen: set[str] = set()
    return [h for h in hosts if not (h in seen or seen.add(h))]


def compress(hosts: Iterable[str]) -> str:
    """The shortest usual Slurm form: hosts grouped by prefix and number width."""
    groups: dict[tuple[str, int], list[int]] = {}
    plain: list[str] = []
    order: list[tuple[str, int] | str] = []
    for host in dict.fromkeys(hosts):
        match = _TRAILING_NUMBER.match(host)
        if not match:
            plain.append(host)
            order.append(host)
            continue
        key = (match.group("prefix"), len(match.group("num")))
        if key not in groups:
            groups[key] = []
            order.append(key)
        groups[key].append(int(match.group("num")))
    parts: list[str] = []
    for key in order:
        if isinstance(key, str):
            parts.append(key)
            continue
        prefix, width = key
        nums = sorted(set(groups[key]))
        if len(nums) == 1:
            parts.append(f"{prefix}{str(nums[0]).zfill(width)}")
            continue
        parts.append(f"{prefix}[{_ranges_text(nums, width)}]")
    return ",".join(parts)


def _ranges_text(nums: list[int], width: int) -> str:
    runs: list[str] = []
    start = prev = nums[0]
    for n in nums[1:] + [None]:  # type: ignore[list-item]
        if n is not None and n == prev + 1:
            prev = n
            continue
        lo, hi = str(start).zfill(width), str(prev).zfill(width)
        runs.append(lo if start == prev else f"{lo}-{hi}")
        if n is not None:
            start = prev = n
    return ",".join(runs)
