"""The monthly review page for operations: ``ReviewInputs`` in, one HTML string out.

The page is a list of blocks. A block is a function ``ReviewInputs -> Section | None``
(None: nothing to show); ``render_review`` renders the blocks in order, then any extra
sections the caller built (e.g. the chargeback reconciliation), then the closing blocks
(how to read this).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from reports.data import ReviewInputs
from reports.html import Section, render_page
from reports.paths import REVIEW_DEPTH
from reports.sections.departments import (
    department_index_section,
    department_table_section,
    low_efficiency_section,
    quota_section,
)
from reports.sections.flags import top_flagged_jobs_section, top_users_section, users_section
from reports.sections.headline import headline_section
from reports.sections.key_figures import review_key_figures_section
from reports.sections.overview import (
    coverage_section,
    department_chart_section,
    how_to_read_section,
    no_jobs_section,
    top_idle_jobs_section,
    utilization_section,
)
from reports.sections.time_profile import time_profile_section
from reports.sections.usage import models_section, partitions_section, schedulers_section
from reports.trends import trends_section

Block = Callable[[ReviewInputs], Section | None]

REVIEW_BLOCKS: tuple[Block, ...] = (
    no_jobs_section,
    review_key_figures_section,
    headline_section,
    department_index_section,
    trends_section,
    department_chart_section,
    department_table_section,
    quota_section,
    low_efficiency_section,
    top_flagged_jobs_section,
    top_users_section,
    utilization_section,
    time_profile_section,
    schedulers_section,
    partitions_section,
    models_section,
    top_idle_jobs_section,
    users_section,
    coverage_section,
)
CLOSING_BLOCKS: tuple[Block, ...] = (how_to_read_section,)


def render_sections(inputs: ReviewInputs, blocks: Sequence[Block]) -> list[Section]:
    return [s for s in (block(inputs) for block in blocks) if s is not None]


def render_review(
    inputs: ReviewInputs,
    *,
    blocks: Sequence[Block] = REVIEW_BLOCKS,
    extra_sections: Sequence[Section] = (),
    closing: Sequence[Block] = CLOSING_BLOCKS,
) -> str:
    """The monthly review page for one month as one HTML document (``YYYY-MM/review.html``).

    ``extra_sections`` go after the blocks and before "how to read this".
    """
    for extra in extra_sections:
        if not isinstance(extra, Section):
            raise TypeError(f"extra_sections must be reports.html.Section, got {type(extra).__name__}")
    sections = render_sections(inputs, blocks) + list(extra_sections) + render_sections(inputs, closing)
    return render_page(
        "review.html",
        sections,
        inputs.settings.templates_dir,
        depth=REVIEW_DEPTH,
        month=inputs.month,
        clusters=inputs.cluster_names,
        generated_from=inputs.generated_from,
    )
