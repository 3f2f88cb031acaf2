"""PromQL and HTTP API text: string literals, literal regexes, selectors, host-shard matchers, times."""

from __future__ import annotations

HOST_LABELS = ("Hostname", "hostname")  # released exporters, newer exporters
_REGEX_META = set("\\.+*?()|[]{}^$")  # Go's regexp.QuoteMeta set (RE2 rejects escaped letters/spaces)


def promql_string(value: str) -> str:
    """A double-quoted PromQL string literal."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def quote_meta(value: str) -> str:
    """A regular expression matching ``value`` literally."""
    return "".join("\\" + c if c in _REGEX_META else c for c in value)


def selector(metric: str, base_selector: str, extra: list[str]) -> str:
    """``metric{<base matchers>,<extra matchers>}`` (``base_selector`` is ``{...}`` or empty)."""
    inner = base_selector.strip().removeprefix("{").removesuffix("}").strip().rstrip(",")
    matchers = [m for m in (inner, *extra) if m]
    return f"{metric}{{{','.join(matchers)}}}" if matchers else metric


def host_shard_matchers(label: str | None, hosts: tuple[str, ...], labels: tuple[str, ...] = HOST_LABELS) -> list[str]:
    """Matchers of one shard of ``labels`` (by default the host labels): a regex over ``label``'s
    values ``hosts``; a shard of a later label excludes series that carry an earlier one (a
    ``hostname`` shard leaves series with ``Hostname`` to the ``Hostname`` shards); ``None``:
    series with none of the labels."""
    if label is None:
        return [f'{name}=""' for name in labels]
    others = [f'{name}=""' for name in labels[: labels.index(label)]]
    return [*others, f"{label}=~{promql_string('|'.join(quote_meta(h) for h in hosts))}"]


def seconds(ms: int) -> str:
    """Milliseconds as the API's decimal seconds, exact."""
    sign, ms = ("-", -ms) if ms < 0 else ("", ms)
    return f"{sign}{ms // 1000}.{ms % 1000:03d}"
