"""Every corpus case, and docs/bad-input.md rendered from them.

.venv/bin/python -m tests.corpus.catalog    # rewrites docs/bad-input.md
"""

from __future__ import annotations

from pathlib import Path

from tests.corpus import OUTCOMES, SOURCES, Case, config, kube, prometheus, sacct

CASES: list[Case] = [*sacct.CASES, *prometheus.CASES, *kube.CASES, *config.CASES]
DOCS = Path(__file__).resolve().parents[2] / "docs" / "bad-input.md"

INTRO = """# Bad input: what cardhours does with it

Real clusters produce accounting and metrics that are wrong, odd or hostile: job names with the
delimiter in them, bytes that are not UTF-8, jobs whose end slurmdbd lost, answers a server cut
short. This page lists the cases cardhours is tested against, each with the outcome it promises.
Every row is a case in `tests/corpus/` that runs the real code on the input and checks the
outcome exactly (`tests/unit/test_bad_input_corpus.py`); this page is rendered from them
(`python -m tests.corpus.catalog`).

Outcomes:

- **billed**: the input is valid, perhaps unusual; it is billed as shown.
- **repaired**: the input was damaged in a way that can be undone without guessing (a `|` inside a
  job name, bytes that are not UTF-8); it is billed, and the repair is recorded on the raw row.
- **quarantined**: the row cannot be true; it is kept in `raw.quarantine` with its location and a
  reason, counted in the CLI summary and the review's data-quality section, and not billed. The rest
  of the month builds. Only a day whose quarantined share exceeds the configured limit fails.
- **refused**: the whole input is unusable (a config error, a file without the columns we need);
  the command stops with a message naming the file, line or key.
- **warned**: billed as it is, with a warning that names it.

The Slurm reason codes are explained in [slurm.md](slurm.md).
"""


def _summary(cases: list[Case]) -> list[str]:
    lines = ["| source | outcome | cases |", "|---|---|---|"]
    for source in SOURCES:
        for outcome in OUTCOMES:
            count = sum(1 for case in cases if case.source == source and case.outcome == outcome)
            if count:
                lines.append(f"| {source} | {outcome} | {count} |")
    lines.append(f"| all | all | {len(cases)} |")
    return lines


def case_rows(cases: list[Case]) -> list[str]:
    return [f"| `{case.id}` | {case.source} | {case.input} | {case.outcome} | {case.expected} |" for case in cases]


def page(cases: list[Case] = CASES) -> str:
    table = ["| case | source | input | outcome | expected |", "|---|---|---|---|---|", *case_rows(cases)]
    return "\n".join(
        [INTRO, "## Cases by source and outcome", "", *_summary(cases), "", "## The cases", "", *table, ""]
    )


if __name__ == "__main__":
    DOCS.write_text(page())
    print(f"wrote {DOCS} ({len(CASES)} cases)")
