"""Constants of the simulated Kubernetes site (tests/integration/kube/conftest.py)."""

from __future__ import annotations

from datetime import datetime, timedelta

STEP = 120
DAYS = 2
T0 = datetime(2026, 3, 2)
T1 = T0 + timedelta(days=DAYS)
