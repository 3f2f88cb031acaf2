"""Kubernetes GPU pods from kube-state-metrics series: reading (``reader``) and the raw landing (``landing``)."""
