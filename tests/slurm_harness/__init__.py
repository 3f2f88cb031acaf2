"""A real single-node Slurm 22.05 with accounting for the integration tests (see cluster.py)."""

from tests.slurm_harness.cluster import SlurmCluster
from tests.slurm_harness.config import CLUSTER_NAME, CRED_EXPIRE, GPU_TYPE, GPUS
from tests.slurm_harness.procs import HarnessError

__all__ = ["CLUSTER_NAME", "CRED_EXPIRE", "GPU_TYPE", "GPUS", "HarnessError", "SlurmCluster"]
