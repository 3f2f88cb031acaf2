"""The month's delivered messages: one per recipient, each with its audience, body and files.

``plan_month`` turns ``[delivery]`` and the month's folder into ``Outgoing`` messages:
operations get ``review.html`` made standalone (plotly.js inlined, so the attachment draws its
figures alone), each department's managers their department's page (standalone too), finance
the chargeback export and the flagged job detail; or links under ``link_base_url`` instead
of attachments when the config says ``"link"``. A message whose attachments exceed
``max_attachment_mb``, or whose files are missing, is a problem named with its file, not sent.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from config import DeliveryConfig, SmtpConfig
from config.delivery import LINK
from reports.data import ReviewInputs
from reports.delivery_text import department_body, finance_body, review_body
from reports.flagged_jobs_csv import FLAGGED_JOBS_CSV
from reports.focus_export import FOCUS_CSV, JOBS_CSV
from reports.mail import compose
from reports.manifest import MANIFEST
from reports.paths import DEPARTMENTS_DIR, REVIEW_FILE, department_file_name
from reports.plotly_asset import standalone

OPERATIONS, FINANCE, DEPARTMENT = "operations", "finance", "department:"
FINANCE_FILES = (FOCUS_CSV, JOBS_CSV, FLAGGED_JOBS_CSV, MANIFEST)  # those the month has
SUBJECT = "[cardhours] "
_TYPES = {".html": ("text", "html"), ".csv": ("text", "csv"), ".sha256": ("text", "plain")}


@dataclass(frozen=True)
class Attachment:
    name: str
    data: bytes

    @property
    def mime(self) -> tuple[str, str]:
        return _TYPES.get(Path(self.name).suffix, ("application", "octet-stream"))


@dataclass(frozen=True)
class Outgoing:
    """One message to one recipient."""

    audience: str  # OPERATIONS, FINANCE or DEPARTMENT + department id
    recipient: str
    subject: str
    body: str
    attachments: tuple[Attachment, ...] = ()

    @property
    def digest(self) -> str:
        """SHA-256 of what the message says and carries (not its date or message id)."""
        digest = hashlib.sha256()
        for part in (self.subject, self.body, *(a.name for a in self.attachments)):
            digest.update(part.encode("utf-8") + b"\0")
        for attachment in self.attachments:
            digest.update(attachment.data)
        return digest.hexdigest()

    def message(self, smtp: SmtpConfig):
        """The ``EmailMessage``: the plain-text body, then each attachment."""
        message = compose(smtp, [self.recipient], self.subject, self.body)
        for attachment in self.attachments:
            maintype, subtype = attachment.mime
            message.add_attachment(attachment.data, maintype=maintype, subtype=subtype, filename=attachment.name)
        return message


@dataclass(frozen=True)
class Planned:
    messages: list[Outgoing]
    problems: list[str]  # messages that cannot be built, each naming its file and what to do


def _link(delivery: DeliveryConfig, month: str, relative: str) -> str:
    return f"{delivery.link_base_url}/{month}/{quote(relative)}"


def _files(
    delivery: DeliveryConfig, mode: str, folder: Path, month: str, names: list[str], page: bool
) -> tuple[tuple[Attachment, ...], str]:
    """The attachments (none when linking) and the sentence saying where the files are."""
    if mode == LINK:
        links = "\n".join(f"  {_link(delivery, month, name)}" for name in names)
        return (), f"Open {'it' if len(names) == 1 else 'them'} here:\n{links}"
    attachments = []
    for name in names:
        data = (folder / name).read_bytes()
        if page:
            data = standalone(data.decode("utf-8")).encode("utf-8")
        attachments.append(Attachment(Path(name).name, data))
    size = sum(len(a.data) for a in attachments)
    if size > delivery.max_attachment_bytes:
        raise ValueError(
            f"{', '.join(str(folder / n) for n in names)} weigh {size / 1e6:.1f} MB as attachments, more than "
            f"[delivery] max_attachment_mb = {delivery.max_attachment_mb:g}: raise it, or set "
            f'{"pages" if page else "finance_files"} = "link" with link_base_url'
        )
    what = "The page is attached: open it in a browser (it works offline)." if page else "The files are attached."
    return tuple(attachments), what


def _for_each(audience: str, recipients: list[str], subject: str, body: str, files) -> list[Outgoing]:
    return [Outgoing(audience, r, SUBJECT + subject, body, files) for r in recipients]


def plan_month(delivery: DeliveryConfig, inputs: ReviewInputs, folder: Path) -> Planned:
    """Every message of the month whose folder is ``folder`` (``<reports dir>/YYYY-MM``)."""
    month = f"{inputs.month:%Y-%m}"
    messages: list[Outgoing] = []
    problems: list[str] = []
    review = folder / REVIEW_FILE
    if delivery.operations:
        if not review.is_file():
            problems.append(f"operations: no review at {review}: build the month first (cardhours run --month {month})")
        else:
            try:
                files, where = _files(delivery, delivery.pages, folder, month, [REVIEW_FILE], True)
                body = review_body(inputs, where)
                messages += _for_each(OPERATIONS, delivery.operations, f"GPU review {month}", body, files)
            except ValueError as error:
                problems.append(f"operations: {error}")
    for department, managers in delivery.departments.items():
        page = f"{DEPARTMENTS_DIR}/{department_file_name(department)}"
        try:
            if (folder / page).is_file():
                files, where = _files(delivery, delivery.pages, folder, month, [page], True)
            else:
                files, where = (), "The department ran no jobs this month, so it has no page."
            body = department_body(inputs, department, where)
            subject = f"GPU use of {department} {month}"
            messages += _for_each(DEPARTMENT + department, managers, subject, body, files)
        except ValueError as error:
            problems.append(f"department {department}: {error}")
    if delivery.finance:
        names = [name for name in FINANCE_FILES if (folder / name).is_file()]
        if not names:
            problems.append(f"finance: no chargeback files in {folder}: run the month's chargeback first")
        else:
            try:
                files, where = _files(delivery, delivery.finance_files, folder, month, names, False)
                body = finance_body(month, names, where)
                messages += _for_each(FINANCE, delivery.finance, f"GPU chargeback files {month}", body, files)
            except ValueError as error:
                problems.append(f"finance: {error}")
    return Planned(messages, problems)
