"""[notices]: the example's section, and the address and opt-out files with their bad lines named."""

from __future__ import annotations

from pathlib import Path

import pytest

from config import EXAMPLE_CONFIG, load_config, parse_config
from config.notice_files import NoticeFileError, read_addresses, read_opt_out
from tests.unit.config_cases import example, put


def test_the_example_section_is_off_and_resolves_its_file() -> None:
    notices = load_config(EXAMPLE_CONFIG).notices
    assert notices is not None and notices.enabled is False
    assert notices.addresses_file == EXAMPLE_CONFIG.parent / "user-emails.csv"
    assert notices.domain == "{user}@example.org"


def test_a_dry_run_config_needs_no_smtp() -> None:
    data = example(put("notices.enabled", False))
    del data["smtp"], data["alerts"]
    assert parse_config(data).notices is not None


def test_addresses_are_read(tmp_path: Path) -> None:
    path = tmp_path / "emails.csv"
    path.write_text("User,Email,Note\nbob,bob@uni.example,x\n\n carol , carol.k@lab.example\n")
    assert read_addresses(path) == {"bob": "bob@uni.example", "carol": "carol.k@lab.example"}


@pytest.mark.parametrize(
    ("text", "where", "fragment"),
    [
        ("name,mail\nbob,bob@x.org\n", ":1:", "header 'user,email'"),
        ("user,email\nbob,bob@x.org\ncarol\n", ":3:", "needs a user and an e-mail address"),
        ("user,email\nbob,Bob <bob@x.org>\n", ":2:", "user 'bob': 'Bob <bob@x.org>' is not an e-mail address"),
        ("user,email\nbob,bob@x.org\nbob,b2@x.org\n", ":3:", "listed twice (an earlier line gives bob@x.org)"),
        ("user,email\nbob,alice:bob@x.org\n", ":2:", "user 'bob': 'alice:bob@x.org' is not an e-mail address"),
        ("user,email\nbob,bob(x)@x.org\n", ":2:", "user 'bob': 'bob(x)@x.org' is not an e-mail address"),
        ('user,email\nbob,"a@x.org, b@x.org"\n', ":2:", "'a@x.org, b@x.org' is not an e-mail address"),
        ("user,email\nbob,bob.@x.org\n", ":2:", "'bob.@x.org' is not an e-mail address"),
        ("", ":1:", "header"),
    ],
)
def test_a_bad_address_line_is_named(tmp_path: Path, text: str, where: str, fragment: str) -> None:
    path = tmp_path / "emails.csv"
    path.write_text(text)
    with pytest.raises(NoticeFileError) as info:
        read_addresses(path)
    assert str(info.value).startswith(f"{path}{where}") and fragment in str(info.value)


def test_a_missing_file_names_the_key(tmp_path: Path) -> None:
    with pytest.raises(NoticeFileError, match=r"no such file \(\[notices\] addresses_file\)"):
        read_addresses(tmp_path / "none.csv")
    with pytest.raises(NoticeFileError, match=r"opt_out_file"):
        read_opt_out(tmp_path / "none.txt")


def test_opt_out_file(tmp_path: Path) -> None:
    path = tmp_path / "out.txt"
    path.write_text("# people who asked\nbob\n  carol  # by mail\n\n")
    assert read_opt_out(path) == {"bob", "carol"}
    path.write_text("bob\ncarol dave\n")
    with pytest.raises(NoticeFileError, match=rf"{path}:2: 'carol dave' is not one user name"):
        read_opt_out(path)
