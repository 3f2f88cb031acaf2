"""``[delivery]``: who receives the month's results by e-mail, sent through ``[smtp]``.

Three audiences: ``operations`` get the review (``review.html``), each department's managers
(``departments``: department id from ``[org.departments]`` -> addresses) their department's
page, and ``finance`` the chargeback export and the flagged job detail. Pages and finance files
are attached, or linked under ``link_base_url`` (where the reports folder is served) when the
site prefers links or the files are larger than ``max_attachment_mb``.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from config.alerts import Address
from config.base import Loc, PositiveFloat, StrictModel, format_loc, raise_problems
from config.urls import BaseUrl

ATTACH, LINK = "attach", "link"


class DeliveryConfig(StrictModel):
    """``[delivery]``: the monthly review, department pages and finance files by e-mail."""

    operations: list[Address] = Field(default_factory=list)  # get the review
    finance: list[Address] = Field(default_factory=list)  # get the FOCUS export and the job detail
    departments: dict[str, list[Address]] = Field(default_factory=dict)  # department id -> its managers
    pages: Literal["attach", "link"] = ATTACH  # the review and department pages
    finance_files: Literal["attach", "link"] = ATTACH
    # Where the reports folder is served, e.g. "https://gpu-reports.example.org/reports":
    # a link is <link_base_url>/YYYY-MM/<file>. Needed when pages or finance_files is "link".
    link_base_url: BaseUrl | None = None
    # A message's attachments together at most this size; larger files are refused (with
    # "attach") naming the file and the limit. Many relays refuse messages over 10-25 MB.
    max_attachment_mb: PositiveFloat = 20.0

    @model_validator(mode="after")
    def _complete(self) -> DeliveryConfig:
        problems: list[tuple[Loc, str]] = []
        if not self.operations and not self.finance and not any(self.departments.values()):
            problems.append((("operations",), "[delivery] needs recipients: operations, finance or departments"))
        for dept, addresses in self.departments.items():
            if not addresses:
                problems.append((("departments", dept), "no addresses: list the managers or remove the department"))
            problems += _twice(("departments", dept), addresses)
        problems += _twice(("operations",), self.operations) + _twice(("finance",), self.finance)
        linked = [key for key in ("pages", "finance_files") if getattr(self, key) == LINK]
        if linked and self.link_base_url is None:
            problems.append(
                (
                    ("link_base_url",),
                    f'required key is missing: {" and ".join(linked)} = "link" needs the URL '
                    "where the reports folder is served",
                )  # fmt: skip
            )
        raise_problems(problems)
        return self

    @property
    def max_attachment_bytes(self) -> int:
        return int(self.max_attachment_mb * 1_000_000)


def _twice(key: Loc, addresses: list[str]) -> list[tuple[Loc, str]]:
    """An address listed again in the same list (case-insensitive), at its second place: it would get two messages."""
    first: dict[str, int] = {}  # lowercased address -> where it is listed first
    problems: list[tuple[Loc, str]] = []
    for index, address in enumerate(addresses):
        at = first.setdefault(address.lower(), index)
        if at != index:
            why = f"{address!r} is listed twice in [delivery] {format_loc(key)} (also as {addresses[at]!r}): keep one"
            problems.append(((*key, index), why))
    return problems
