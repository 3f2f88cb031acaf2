"""The chargeback's price key of a GPU model label: the label less a trailing MIG profile,
so a configured model whose name has a space ("RTX 6000") is priced, and its MIG labels too."""

from datetime import datetime

import polars as pl

from contracts.price_segments import base_model
from tests.support.chargeback_frames import build, capacity, rates, run, usage

PRICED = rates(gpu_hour={"H100": 2.5, "A100": 1.4, "RTX 6000 Ada": 0.9})


def keys(*labels: str) -> list[str]:
    return pl.DataFrame({"m": list(labels)}).select(base_model(pl.col("m")))["m"].to_list()


def test_price_key_drops_only_a_mig_profile():
    assert keys("A100 3g.40gb", "A100 1g.10gb+me", "H100", "RTX 6000 Ada", "RTX 6000 Ada 1g.12gb", "A100 7g.80gb") == [
        "A100",
        "A100",
        "H100",
        "RTX 6000 Ada",
        "RTX 6000 Ada",
        "A100",
    ]


def test_a_model_with_a_space_in_its_name_is_charged_at_its_price():
    built = build(
        usage(
            run("r1", datetime(2026, 10, 2), 10, gpu_model="RTX 6000 Ada"),
            run("m1", datetime(2026, 10, 2), 7, gpu_model="A100 3g.40gb", gpus=3 / 7),
        ),
        PRICED,
        capacity(h100_gpus=0),
    )
    lines = built.lines.sort("job_id")
    assert lines["is_priced"].to_list() == [True, True]
    assert lines["list_unit_price_micro"].to_list() == [1_400_000, 900_000]  # m1 at A100's, r1 at its own
