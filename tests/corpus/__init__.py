"""The bad-input corpus: inputs real clusters produce that are wrong, odd or hostile, each with
the outcome cardhours promises (amounts billed, quarantine reason, refusal message).

A case is data plus a ``check`` that runs the real code on it and asserts the exact outcome.
tests/unit/test_bad_input_corpus.py runs every case; docs/bad-input.md lists them (a test keeps
the page and the cases in step). Modules: ``sacct`` (Slurm accounting), ``prometheus`` (HTTP API
answers), ``kube`` (kube-state-metrics series), ``config`` (config files).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

SOURCES = ("sacct", "prometheus", "kube", "config")
OUTCOMES = ("billed", "repaired", "quarantined", "refused", "warned")
_BARE_PIPE = re.compile(r"(?<!\\)\|")


@dataclass(frozen=True)
class Case:
    id: str  # unique, kebab-case, e.g. "sacct-pipe-in-job-name"
    source: str  # one of SOURCES
    input: str  # what the input looks like, one line for the docs table (Markdown, no '|')
    outcome: str  # one of OUTCOMES
    expected: str  # the promised result, one line for the docs table (exact numbers, reason code, message)
    check: Callable[[], None]  # runs the real code on the input and asserts ``expected`` exactly

    def __post_init__(self) -> None:
        if self.source not in SOURCES or self.outcome not in OUTCOMES:
            raise ValueError(f"case {self.id}: source {self.source!r} / outcome {self.outcome!r} unknown")
        if _BARE_PIPE.search(self.input) or _BARE_PIPE.search(self.expected):
            raise ValueError(f"case {self.id}: write a '|' as '\\|', a bare one breaks the docs table")
