"""cardhours: GPU utilization analytics and chargeback.

This package is the top layer: the ``cardhours`` command (``cli``), the runner that executes the
Dagster jobs in-process, and the benchmarks. Everything else sits below it.
"""

__version__ = "0.1.0"
