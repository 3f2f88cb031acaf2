"""The Jinja2 templates of the report pages: the packaged ones (``reports/templates``) and a
site's own (``[reports] templates_dir``), which win over packaged ones of the same name.

Autoescaping is on for every template: a value placed with ``{{ ... }}`` is escaped unless it
is ``Markup`` built here (a rendered section, a plotly figure). A site template may extend the
packaged one it replaces under the ``cardhours/`` prefix, e.g. ``{% extends
"cardhours/header.html" %}``, and override just one of its blocks.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

from jinja2 import (
    ChoiceLoader,
    Environment,
    FileSystemLoader,
    PackageLoader,
    PrefixLoader,
    StrictUndefined,
    TemplateError,
    TemplateSyntaxError,
)
from markupsafe import Markup

PACKAGED_PREFIX = "cardhours"


class ReportTemplateError(ValueError):
    """A template could not be loaded or rendered (most often a site's override)."""


@lru_cache(maxsize=8)
def environment(templates_dir: Path | None = None) -> Environment:
    """The template environment: ``templates_dir`` first (if any), then the packaged templates,
    which also stay reachable as ``cardhours/<name>``."""
    packaged = PackageLoader("reports", "templates")
    site = [FileSystemLoader(templates_dir)] if templates_dir is not None else []
    return Environment(
        loader=ChoiceLoader([*site, packaged, PrefixLoader({PACKAGED_PREFIX: packaged})]),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def _problem(name: str, templates_dir: Path | None, error: TemplateError) -> ReportTemplateError:
    where = name
    if isinstance(error, TemplateSyntaxError) and error.name:
        where = f"{error.name}, line {error.lineno}"
    hint = (
        f"check the templates in {templates_dir} ([reports] templates_dir; docs/reports.md lists the names "
        "and values each template gets) or remove the override to use the packaged one"
        if templates_dir is not None
        else "the packaged templates of reports/ are broken: reinstall cardhours"
    )
    return ReportTemplateError(f"report template {where} failed: {error.message or type(error).__name__}; {hint}")


def render(name: str, templates_dir: Path | None = None, /, **values: Any) -> Markup:
    """Render one template with ``values`` (escaped unless ``Markup``)."""
    try:
        return Markup(environment(templates_dir).get_template(name).render(**values))
    except TemplateError as error:
        raise _problem(name, templates_dir, error) from error
