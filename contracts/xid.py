"""The XID errors that make a GPU unusable: the codes ``staging.stg_dcgm__gpu_xid`` turns into
``down`` time, each with the reason the capacity split and the review print.

dcgm-exporter's ``DCGM_FI_DEV_XID_ERRORS`` is a gauge holding the last XID the driver logged
for the GPU (0: none since the driver loaded). The set below is NVIDIA's XID catalogue
(docs.nvidia.com/deploy/xid-errors) codes whose resolution is a GPU reset, a node reboot or
hardware service: the GPU cannot be trusted with work until then. Every other code (13, 31, 43:
an application's fault, the GPU is fine; 92 and 94: ECC events the GPU works through; and the
codes not listed) is informational: it never makes a GPU down.
"""

from __future__ import annotations

# XID -> reason of the downtime interval
CRITICAL_XIDS: dict[int, str] = {
    48: "XID 48: double-bit ECC error",
    63: "XID 63: row remapping pending (reset the GPU)",
    64: "XID 64: row remapping failed",
    74: "XID 74: NVLink error",
    79: "XID 79: GPU has fallen off the bus",
    95: "XID 95: uncontained ECC error",
    119: "XID 119: GSP RPC timeout",
    120: "XID 120: GSP error",
}
# Listed to say they were considered; never downtime. Application faults (the GPU is fine), and
# ECC events the GPU works through: 92 is a warning, 94 ends the application that hit the error
# while the GPU keeps serving others (its page is retired at the next reset).
INFORMATIONAL_XIDS: dict[int, str] = {
    13: "graphics engine exception (application fault)",
    31: "GPU memory page fault (application fault)",
    43: "GPU stopped processing (application fault)",
    92: "high single-bit ECC error rate (a warning; the GPU keeps working)",
    94: "contained ECC error (the application is ended; the GPU keeps working)",
}

if set(CRITICAL_XIDS) & set(INFORMATIONAL_XIDS):
    raise ValueError("an XID is either critical or informational")


def xid_reason(code: int) -> str | None:
    """The downtime reason of a critical XID; None for any other value (0, informational, unknown)."""
    return CRITICAL_XIDS.get(code)
