"""The Kubernetes part of ``cardhours simulate --kube``: pods, their series, their truth.

``KubeSimulation`` plans every pod of the window up front (scenarios on separate nodes of
the pool, see ``pool``), then per day labels the pool's DCGM samples with the pods
(``add_day``), and at the end writes ``kube_state.om`` (kube-state-metrics, Kueue and
Volcano series) and ``truth_pods.parquet``. Departments come from the simulated org:

| who | department from |
|---|---|
| `chat-api`, `embed-api` (namespace `inference`) | namespace label `label_department` |
| `rerank-api` (namespace `inference`, MIG 3g.40gb) | pod label `label_department` (wins over the namespace's) |
| training in `ml-research` | the config's `[[org.namespaces]]` mapping |
| training in `ml-vision` | pod label `label_department` |
| one notebook in `debug` | pod label `label_team` |
| other notebooks, `sandbox` pods | nothing: `unmapped` |
"""

from __future__ import annotations

from datetime import date, datetime

import numpy as np
import polars as pl

from simulate.jobs import Org
from simulate.kube import dcgm, interactive, ksm, nodes, queues, services, training
from simulate.kube.om_text import write_daily, write_openmetrics
from simulate.kube.pods import Pod
from simulate.kube.pool import SlotPool, kube_inventory, kube_nodes
from simulate.kube.truth import marker, pod_allocations, truth_pods
from simulate.samples import generate_day

DAY = 86_400
TRAINING_HOSTS = ("kgpu-002", "kgpu-003")
QUOTA_GPUS = 16  # the ClusterQueue's nominal quota: the two training nodes


class KubeSimulation:
    def __init__(
        self,
        cluster: str,
        start: date,
        days: int,
        step_seconds: int,
        seed: int,
        org: Org,
        state_step_seconds: int | None = None,
    ) -> None:
        """``step_seconds``: the pool's DCGM sample step; ``state_step_seconds``: the scrape
        interval of kube-state-metrics, Kueue and Volcano (default: the same)."""
        self.cluster, self.step, self.seed = cluster, step_seconds, seed
        self.state_step = state_step_seconds or step_seconds
        self.start = start
        self.origin = datetime(start.year, start.month, start.day)
        self.window = days * DAY
        keys = [key for key, _, _ in org.departments]
        self.mapped_department = keys[0]  # namespace ml-research, by config mapping
        self.namespace_department = keys[1 % len(keys)]  # label on namespace inference
        self.namespace_labels = {
            "inference": {"label_department": self.namespace_department},
            "ml-research": {},
            "ml-vision": {},
            "debug": {},
            "sandbox": {},
        }
        rng = np.random.default_rng([seed, 77])
        self.jobs = training.run_training(SlotPool.of(TRAINING_HOSTS), rng, self.window, (keys[0], keys[2 % len(keys)]))
        self.pods: list[Pod] = self._services(rng, keys[2 % len(keys)])
        interactive_pool = SlotPool.of(("kgpu-004",))
        self.pods += interactive.notebooks(interactive_pool, rng, self.window, keys[-1])
        self.pods += interactive.sandbox(interactive_pool, rng, self.window)
        self.pods += [pod for job in self.jobs for pod in job.pods]
        self.inventory = kube_inventory(cluster, seed)
        self.allocations = pod_allocations(self.pods, self.origin, seed)
        self.markers = pl.DataFrame(
            {
                "marker": [marker(i) for i in range(len(self.pods))],
                "pod": [p.name for p in self.pods],
                "namespace": [p.namespace for p in self.pods],
                "container": [p.container for p in self.pods],
            }
        )

    def _services(self, rng: np.random.Generator, pod_label_department: str) -> list[Pod]:
        ns_dept = self.namespace_department
        whole, mig = SlotPool.of(("kgpu-001",)), SlotPool.of(("kmig-001",))
        plan = [
            (
                services.Service(
                    "chat-api",
                    "inference",
                    "nvidia_com_gpu",
                    None,
                    "dense",
                    services.day_night(2, 7, 0),
                    {"label_app": "chat-api"},
                    ns_dept,
                    "namespace_label",
                ),
                whole,
            ),
            (
                services.Service(
                    "embed-api",
                    "inference",
                    "nvidia_com_mig_1g_10gb",
                    "1g.10gb",
                    "dense",
                    services.day_night(3, 10, 0),
                    {"label_app": "embed-api"},
                    ns_dept,
                    "namespace_label",
                ),
                mig,
            ),
            (
                services.Service(
                    "rerank-api",
                    "inference",
                    "nvidia_com_mig_3g_40gb",
                    "3g.40gb",
                    "bursty",
                    lambda t: 2,
                    {"label_app": "rerank-api", "label_department": pod_label_department},
                    pod_label_department,
                    "pod_label",
                    rollout_at=self.window // 2,
                ),
                mig,
            ),
        ]
        return [pod for service, pool in plan for pod in services.run_service(service, pool, rng, self.window)]

    def add_day(self, day: date, slurm: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
        """The day's samples of all nodes: (RAW_SAMPLE_SCHEMA, the OpenMetrics writer's frame)."""
        samples = generate_day(self.inventory, self.allocations, day, self.step, self.seed, self.cluster)
        raw, om = dcgm.label_samples(samples, self.markers)
        return pl.concat([slurm, raw]), pl.concat([dcgm.with_om_columns(slurm), om])

    def write(self, state_path, truth_path, daily: bool = False) -> tuple[int, int]:
        """Write kube_state.om (``daily``: a folder of one file per day) and truth_pods.parquet;
        returns (samples written, pods)."""
        origin = int((self.origin - datetime(1970, 1, 1)).total_seconds())
        series = ksm.namespace_series(self.namespace_labels, self.window)
        series += [s for pod in self.pods for s in ksm.pod_series(pod, self.window, origin)]
        series += queues.kueue_series(self.jobs, QUOTA_GPUS, self.window) + queues.volcano_series(
            self.jobs, self.window
        )
        series += nodes.node_series(kube_nodes(0), self.window)
        families = {**ksm.FAMILIES, **queues.FAMILIES, **nodes.FAMILIES}
        if daily:
            written = write_daily(state_path, families, series, origin, self.state_step, self.start)
        else:
            written = write_openmetrics(state_path, families, series, origin, self.state_step)
        truth = truth_pods(self.pods, self.cluster, self.origin, self.window, self.state_step)
        truth.write_parquet(truth_path)
        return written, truth.height

    def config_lines(self, state_file: str) -> list[str]:
        """The ``[clusters.kubernetes]`` table and namespace mapping for cardhours.toml (appended at the end)."""
        return [
            "[clusters.kubernetes]",
            f'path = "{state_file}"',
            f"step_seconds = {self.state_step}",
            "",
            "[clusters.kubernetes.kueue]",
            "enabled = true",
            "",
            "[clusters.kubernetes.volcano]",
            "enabled = true",
            "",
            "[[org.namespaces]]",
            'namespace = "ml-research"',
            f'department = "{self.mapped_department}"',
            "",
        ]
