"""Both Prometheus decoders in tests: numba (``cardhours[fast]``, installed by the test extra)
and pyarrow (the default install)."""

from __future__ import annotations

import pytest

from sources.prometheus.decoders import numba_missing

NEEDS_NUMBA = pytest.mark.skipif(numba_missing() is not None, reason="the numba decoder is the cardhours[fast] extra")
BOTH_DECODERS = pytest.mark.parametrize("decoder", [pytest.param("numba", marks=NEEDS_NUMBA), "pyarrow"])
