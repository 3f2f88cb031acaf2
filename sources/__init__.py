"""Readers of the outside world: metrics (Prometheus, OpenMetrics files, simulator Parquet),
sacct and Kubernetes series. Each returns raw frames in the contracts' shapes plus what it
quarantined; nothing here transforms beyond naming and typing.
"""
