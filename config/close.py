"""When a billing month may be closed: ``[close]`` (docs/chargeback.md, "Closed months").

``cardhours close`` refuses a month unless it ended at least ``grace_days`` ago (late sacct
records and account fixes still arrive), every cluster's sample coverage
(marts.mart_cluster_monthly.sample_coverage) is at least ``min_coverage``, and the month's
quarantined share of each cluster and source (meta.landings) is at most
``max_quarantine_share``; ``--accept-gaps "reason"`` closes anyway and stores the reason.
"""

from __future__ import annotations

from config.base import NonNegativeInt, Ratio, StrictModel


class CloseConfig(StrictModel):
    """``[close]``: the conditions a month must meet before ``cardhours close`` freezes it."""

    grace_days: NonNegativeInt = 5  # whole days after the month's end before it may close
    min_coverage: Ratio = 0.9  # lowest sample coverage of any cluster's jobs in the month
    max_quarantine_share: Ratio = 0.01  # highest quarantined share per cluster and source in the month
