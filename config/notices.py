"""``[notices]``: users told about their own wasted GPU time, by e-mail (opt-in).

A notice lists a user's flagged jobs of a month (marts.fct_job_flags) with what they wasted, why
and what to do (reports/user_notice_text.py). ``enabled`` turns on sending (``cardhours
notify-users`` without ``--dry-run``, and the monthly schedule); it needs ``[smtp]``. A dry run
writes the messages to files and works without ``enabled`` or ``[smtp]``, to review them first.

Addresses come from ``addresses_file`` (CSV ``user,email``; it wins for the users it lists) and/or
``domain`` (``"{user}@example.org"``). The files are read when notices are prepared
(config/notice_files.py), so a bad line stops the notices, naming the file and line, and never the
pipelines.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, Field, model_validator

from config.alerts import Address, _check_address
from config.base import ConfigPath, NonNegativeFloat, PositiveInt, StrictModel, Text, raise_problems

USER = "{user}"


def _check_domain(value: str) -> str:
    """``{user}@example.org``: ``{user}`` once, the rest an address once it is filled in."""
    if value.count(USER) != 1 or value.replace(USER, "").count("{") or value.replace(USER, "").count("}"):
        raise ValueError(f"{value!r} must contain {USER} exactly once and no other braces, e.g. '{USER}@example.org'")
    try:
        _check_address(value.replace(USER, "someone"))
    except ValueError:
        example = f"'{USER}@example.org'"
        raise ValueError(f"{value!r} does not make an e-mail address from a user name, e.g. {example}") from None
    return value


DomainPattern = Annotated[str, AfterValidator(_check_domain)]


class NoticesConfig(StrictModel):
    """``[notices]``: per-user notices of flagged jobs."""

    enabled: bool = False  # opt-in: nothing is sent (and the schedule sends nothing) until true
    addresses_file: ConfigPath | None = None  # CSV with a header line "user,email", one user a line
    domain: DomainPattern | None = None  # "{user}@example.org": the address of a user not in addresses_file
    # At most one notice per user in this many days (meta.user_notices, whatever month it was about),
    # counted in whole UTC days: a notice sent on day D allows the next from day D + period_days on.
    # 28 because the monthly run goes out on the 1st and February has 28 days: a longer period
    # would hold back (and so lose) the March notice of everyone told on February 1.
    period_days: PositiveInt = 28
    opt_out: list[Text] = Field(default_factory=list)  # users who never get a notice
    opt_out_file: ConfigPath | None = None  # more of them: one user name a line, '#' starts a comment
    # A user whose flagged jobs wasted fewer GPU-hours in the month than this gets no notice.
    min_wasted_gpu_hours: NonNegativeFloat = 10.0
    max_jobs: PositiveInt = 10  # jobs listed in one notice, most wasteful first; the rest are counted
    contact: Address | None = None  # who users write to with questions or to opt out (named in the notice)

    @model_validator(mode="after")
    def _an_address_source(self) -> NoticesConfig:
        if self.addresses_file is None and self.domain is None:
            raise_problems(
                [(("addresses_file",), "notices need user addresses: set addresses_file, or domain, or both")]
            )
        return self
