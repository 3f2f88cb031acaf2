"""NVIDIA dcgm-exporter: its metric names and labels onto cardhours' signals and label columns.

Units: dcgm-exporter already reports each field in the signal's unit (ratios 0-1,
GPU_UTIL %, framebuffer MiB, power W, energy mJ since boot), so every scale is 1.

Labels: ``Hostname`` (released exporters) else ``hostname`` (newer), ``gpu``, ``UUID``,
``modelName``, ``pci_bus_id``, ``device``, ``GPU_I_ID`` / ``GPU_I_PROFILE`` (MIG),
``hpc_job`` (the Slurm job mapping); the pod-resources lookup adds ``pod``,
``namespace``, ``container`` (``pod_name`` / ``pod_namespace`` on old releases).
"""

from __future__ import annotations

from contracts.exporters.mapping import Exporter, ExporterMetric, SeriesLabels

# help: dcgm-exporter's default-counters.csv descriptions
DCGM = Exporter(
    name="dcgm",
    title="dcgm-exporter",
    metrics=(
        ExporterMetric("DCGM_FI_DEV_GPU_UTIL", "gpu_util", help="GPU utilization (in %)."),
        ExporterMetric(
            "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gr_engine_active", help="Ratio of time the graphics engine is active."
        ),
        ExporterMetric(
            "DCGM_FI_PROF_SM_ACTIVE", "sm_active", help="The ratio of cycles an SM has at least 1 warp assigned."
        ),
        ExporterMetric(
            "DCGM_FI_PROF_SM_OCCUPANCY", "sm_occupancy", help="The ratio of number of warps resident on an SM."
        ),
        ExporterMetric(
            "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "tensor_active", help="Ratio of cycles the tensor (HMMA) pipe is active."
        ),
        ExporterMetric(
            "DCGM_FI_PROF_DRAM_ACTIVE",
            "dram_active",
            help="Ratio of cycles the device memory interface is active sending or receiving data.",
        ),
        ExporterMetric("DCGM_FI_DEV_FB_USED", "fb_used_mib", help="Framebuffer memory used (in MiB)."),
        ExporterMetric("DCGM_FI_DEV_FB_FREE", "fb_free_mib", help="Framebuffer memory free (in MiB)."),
        ExporterMetric("DCGM_FI_DEV_POWER_USAGE", "power_w", help="Power draw (in W)."),
        ExporterMetric(
            "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
            "energy_mj",
            help="Total energy consumption since boot (in mJ).",
        ),
    ),
    labels=SeriesLabels(
        hostname=("Hostname", "hostname"),
        integers={"gpu": "gpu", "GPU_I_ID": "gpu_i_id"},
        strings={
            "UUID": "uuid",
            "modelName": "model_name",
            "pci_bus_id": "pci_bus_id",
            "device": "device",
            "GPU_I_PROFILE": "gpu_i_profile",
            "hpc_job": "hpc_job",
        },
        workload={"pod": ("pod", "pod_name"), "namespace": ("namespace", "pod_namespace"), "container": ("container",)},
    ),
)
