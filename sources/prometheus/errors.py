"""The error of a response that cannot be decoded (shared by the decoders)."""

from __future__ import annotations


class DecodeError(ValueError):
    """The response is not a successful matrix (or series list); ``error_type``/``error`` when the
    server said why."""

    def __init__(self, message: str, error_type: str | None = None, error: str | None = None) -> None:
        super().__init__(message)
        self.error_type = error_type
        self.error = error
