"""The screening of a day read in shards, added up (``sources.shards``: a device's rows are all
in one shard, so each count, a sum over rows, series or quarantine groups of devices, adds up
to what screening the whole day at once counts; the quarantine rows are the shards' together).
Pure: ``ScreenResult``s in, totals out."""

from __future__ import annotations

from dataclasses import dataclass, field

import polars as pl

from contracts.schemas import QUARANTINE_SCHEMA, SAMPLE_VALUE_COLUMNS
from transforms.helpers.dcgm_quality import ScreenResult, quarantine_share


@dataclass
class ScreenTotals:
    """Counts summed over the shards screened so far, their quarantine rows, and the value
    columns with at least one non-null value in any shard's clean rows."""

    counts: dict[str, int] = field(default_factory=dict)
    quarantines: list[pl.DataFrame] = field(default_factory=list)
    present: set[str] = field(default_factory=set)

    def add(self, result: ScreenResult) -> None:
        for name, value in result.counts.items():
            self.counts[name] = self.counts.get(name, 0) + value
        self.counts = dict(sorted(self.counts.items()))
        self.quarantines.append(result.quarantine.select(list(QUARANTINE_SCHEMA)).cast(QUARANTINE_SCHEMA))
        if result.clean.height:
            non_null = result.clean.select(pl.col(SAMPLE_VALUE_COLUMNS).count()).row(0, named=True)
            self.present |= {name for name, n in non_null.items() if n > 0}

    @property
    def quarantine(self) -> pl.DataFrame:
        """Every shard's quarantine rows (``QUARANTINE_SCHEMA``)."""
        return pl.concat([pl.DataFrame(schema=QUARANTINE_SCHEMA), *self.quarantines])

    @property
    def fields_present(self) -> list[str]:
        """The value columns any shard delivered a value of, in ``SAMPLE_VALUE_COLUMNS`` order."""
        return [name for name in SAMPLE_VALUE_COLUMNS if name in self.present]

    @property
    def share(self) -> float:
        """Quarantined values / values delivered (``quarantine_share``) over all shards."""
        return quarantine_share(self.counts)
