"""How a run is told to do what it would otherwise refuse, declared once for the CLI
(cardhours/cli.py), the runner and the assets that read it (pipelines/shrink_guard.py)."""

from __future__ import annotations

# A daily run tagged FORCE_SHRINK_TAG = "true" replaces a landed day with a read holding fewer
# samples or jobs (the retention guard refuses that otherwise); cardhours run sets it with the flag.
FORCE_SHRINK_TAG = "cardhours/force_shrink"
FORCE_SHRINK_FLAG = "--force-shrink"
