"""Simulated organisation: divisions, departments, their Slurm accounts and the users who submit."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

DEPARTMENTS = (  # key, name, division
    ("vision", "Computer Vision", "research"),
    ("nlp", "Language Models", "research"),
    ("speech", "Speech and Audio", "research"),
    ("search", "Search Ranking", "product"),
    ("recsys", "Recommendations", "product"),
    ("ads", "Ads Quality", "product"),
)
DIVISIONS = {"research": "Research", "product": "Product"}
ACCOUNT_SUFFIXES = ("train", "infer", "dev")
UNMAPPED_ACCOUNT = "legacy-ml"
SURNAMES = (
    "kumar",
    "chen",
    "garcia",
    "smith",
    "nguyen",
    "mueller",
    "rossi",
    "tanaka",
    "silva",
    "okafor",
    "novak",
    "ivanova",
    "kim",
    "haddad",
    "olsen",
    "dubois",
    "moreau",
    "fischer",
    "lopez",
    "khan",
    "patel",
    "singh",
    "wang",
    "li",
    "zhang",
    "jensen",
    "costa",
    "santos",
    "ali",
    "yilmaz",
    "kowalski",
    "horvat",
    "bauer",
    "meyer",
    "ito",
    "sato",
    "park",
    "cohen",
    "levi",
    "brown",
)


@dataclass(frozen=True)
class Account:
    name: str
    department: str
    mapped: bool  # False: left out of the written config (lands in "unmapped")


@dataclass(frozen=True)
class User:
    name: str
    uid: int
    account: str  # home account
    weight: float  # relative submission activity
    sloppy: bool  # leaves GPUs idle more often


@dataclass(frozen=True)
class Org:
    divisions: dict[str, str]  # key -> name
    departments: tuple[tuple[str, str, str], ...]  # (key, name, division)
    accounts: tuple[Account, ...]
    users: tuple[User, ...]

    def account(self, name: str) -> Account:
        return next(a for a in self.accounts if a.name == name)


def build_org(seed: int) -> Org:
    """4-6 departments over two divisions, 1-3 accounts each plus one unmapped, ~40 users."""
    rng = np.random.default_rng([seed, 2])
    research = [d for d in DEPARTMENTS if d[2] == "research"]
    product = [d for d in DEPARTMENTS if d[2] == "product"]
    extra = int(rng.integers(0, 3))
    picks = set(rng.choice(3, 2 + extra // 2 + extra % 2, replace=False).tolist())
    depts = tuple(research[i] for i in sorted(picks)) + tuple(
        product[i] for i in sorted(rng.choice(3, 2 + extra // 2, replace=False).tolist())
    )
    accounts = [
        Account(f"{key}-{suffix}", key, True)
        for key, _, _ in depts
        for suffix in ACCOUNT_SUFFIXES[: int(rng.integers(1, 4))]
    ]
    accounts.append(Account(UNMAPPED_ACCOUNT, depts[int(rng.integers(len(depts)))][0], False))
    n_users = int(rng.integers(36, 45))
    letters = "abcdefghijklmnoprstvwyz"
    names = [
        f"{letters[p // len(SURNAMES)]}{SURNAMES[p % len(SURNAMES)]}"
        for p in rng.choice(len(letters) * len(SURNAMES), n_users, replace=False)
    ]
    homes = [UNMAPPED_ACCOUNT] * 2 + [accounts[i].name for i in rng.integers(0, len(accounts) - 1, n_users - 2)]
    users = tuple(
        User(names[i], 20001 + i, homes[i], float(rng.lognormal(0.0, 0.8)), bool(rng.random() < 0.15))
        for i in range(n_users)
    )
    return Org(dict(DIVISIONS), depts, tuple(accounts), users)
