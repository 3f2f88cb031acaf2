"""The simulated Kubernetes node pool (``cardhours simulate --kube``): pods, kube-state-metrics,
Kueue and Volcano series, and their ground truth. Entry point: ``run.KubeSimulation``."""
