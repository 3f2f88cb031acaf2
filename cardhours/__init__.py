"""cardhours: GPU utilization analytics and chargeback."""

__version__ = "0.1.0"
