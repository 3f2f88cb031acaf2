"""A simulated site's config pointed at a warehouse of its own (the same metrics and sacct files).

``own_warehouse(config, name)`` writes ``name.toml`` beside the simulator's ``cardhours.toml``
with the DuckDB file, the lake and the reports under the folder ``name`` there: two runs of the
same days then land in two lakes and build two warehouses that can be compared.
"""

from __future__ import annotations

from pathlib import Path

# What `cardhours simulate` writes into cardhours.toml for the warehouse and the reports.
SIMULATED = {"path": "cardhours.duckdb", "dir": "reports"}


def own_warehouse(config: Path, name: str) -> Path:
    text = config.read_text()
    for key, value in SIMULATED.items():
        line = f'{key} = "{value}"'
        if line not in text:
            raise ValueError(f"{config}: no line {line!r} (not a config written by cardhours simulate?)")
        text = text.replace(line, f'{key} = "{name}/{value}"', 1)
    (config.parent / name).mkdir()
    other = config.with_name(f"{name}.toml")
    other.write_text(text)
    return other
