"""Which decoder a read uses for the answers in Prometheus' compact layout.

- ``pyarrow`` (the default install): each answer decoded on arrival, its values lists parsed
  by pyarrow's compute kernels (``csv_values``) and its series' windows cut (``chunks``); a
  metric's answers are then merged into output order (``merge``).
- ``numba`` (``pip install 'cardhours[fast]'``): each answer scanned on arrival, then decoded
  by a compiled loop straight into its place in the metric's output (``place``); a metric
  it cannot read exactly as counted goes the pyarrow way instead.

``auto`` takes numba when it can be imported. Both give the same samples; an answer in any
other layout goes to the ``json.loads`` reference decoder (``decode.decode_matrix_json``)
either way.
"""

from __future__ import annotations

from functools import cache
from importlib import import_module
from typing import Literal, get_args

Decoder = Literal["auto", "numba", "pyarrow"]
DECODERS: tuple[str, ...] = get_args(Decoder)
FAST_EXTRA = "pip install 'cardhours[fast]'"


class DecoderUnavailable(RuntimeError):
    """The numba decoder was asked for where numba cannot be imported."""


@cache
def numba_missing() -> str | None:
    """Why the compiled decoder cannot be used in this process (the import error), or None."""
    try:
        import_module("sources.prometheus.jit_place")  # and jit_values, jit_sample, numba
    except ImportError as exc:
        return str(exc) or type(exc).__name__
    return None


def validate(decoder: str) -> str:
    """``decoder`` when it is one of :data:`DECODERS`; ValueError naming them otherwise."""
    if decoder not in DECODERS:
        raise ValueError(f"unknown decoder {decoder!r}: one of {', '.join(DECODERS)}")
    return decoder


def choose(decoder: str = "auto") -> str:
    """``numba`` or ``pyarrow``: the decoder a read asked for ``decoder`` uses."""
    if validate(decoder) == "pyarrow":
        return decoder
    missing = numba_missing()
    if missing is None:
        return "numba"
    if decoder == "numba":
        raise DecoderUnavailable(
            f"the numba decoder cannot be imported ({missing}): {FAST_EXTRA}, or use the default pyarrow decoder"
        )
    return "pyarrow"
