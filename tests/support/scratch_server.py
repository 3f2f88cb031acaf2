"""A test server that lives in a temp directory of its own (tests/support/postgres.py, redis.py).

A subclass sets ``prefix`` and defines ``_start`` (start the server under ``self.root``) and
``__exit__`` (stop it, remove the directory). Entering makes the directory and starts the
server; a start that fails is cleaned up by ``__exit__`` before the error propagates.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Self


class ScratchServer:
    prefix = "cardhours-"
    root: Path | None = None

    def _start(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        self.root = Path(tempfile.mkdtemp(prefix=self.prefix))
        try:
            self._start()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        raise NotImplementedError
