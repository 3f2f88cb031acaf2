"""plotly.js, written once per reports folder and shared by every page.

``<reports dir>/assets/plotly-<plotly.js version>.min.js`` comes from the installed ``plotly``
package (never downloaded). The pages load it by a relative path (``../assets/...`` from a
review, ``../../assets/...`` from a department page), so the folder works offline when it is
opened from disk or copied elsewhere as a whole. The file is written atomically, and only when
it is missing or differs from the package's bundle; a new plotly version gets a new name, so a
page written earlier keeps the version it was drawn with.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

from plotly.offline import get_plotlyjs, get_plotlyjs_version

from reports.atomic import write_atomic_with

ASSETS_DIR = "assets"


def plotly_js_name() -> str:
    """``plotly-<version>.min.js``: the file name of the installed bundle."""
    return f"plotly-{get_plotlyjs_version()}.min.js"


def plotly_js_href(depth: int) -> str:
    """The bundle's path relative to a page ``depth`` folders below the reports folder
    (1: ``YYYY-MM/review.html``, 2: ``YYYY-MM/departments/<dept>.html``)."""
    if depth < 0:
        raise ValueError(f"depth must be 0 or more, got {depth}")
    return "../" * depth + f"{ASSETS_DIR}/{plotly_js_name()}"


@lru_cache(maxsize=1)
def _bundle() -> bytes:
    return get_plotlyjs().encode("utf-8")


def write_plotly_js(reports_dir: Path) -> Path:
    """``<reports_dir>/assets/plotly-<version>.min.js``, written when missing or different."""
    target = Path(reports_dir) / ASSETS_DIR / plotly_js_name()
    bundle = _bundle()
    if target.is_file() and target.stat().st_size == len(bundle) and target.read_bytes() == bundle:
        return target
    return write_atomic_with(target, lambda path: path.write_bytes(bundle))


_SCRIPT = re.compile(
    r'<script src="(?:\.\./)*' + ASSETS_DIR + r'/plotly-[0-9][0-9a-z.-]*\.min\.js" charset="utf-8"></script>'
)


def standalone(page: str) -> str:
    """``page`` with the shared plotly.js inlined: one file that draws its figures on its own
    (for a page sent alone, e.g. a mail attachment; about 4.8 MB more)."""
    bundle = _bundle().decode("utf-8")
    if "</script" in bundle.lower():  # would end the inline <script> early
        raise ValueError("plotly.js bundle contains '</script' and cannot be inlined")
    inlined, count = _SCRIPT.subn(lambda _: f"<script>{bundle}</script>", page, count=1)
    if count != 1:
        raise ValueError("the page does not load the shared plotly.js: nothing to inline")
    return inlined
