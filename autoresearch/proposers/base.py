"""What every proposer hands the loop: a hypothesis, a patch plus its reasoning."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Protocol

__all__ = ["Hypothesis", "Proposer", "patch_sha256"]


def patch_sha256(patch: str) -> str:
    """A patch's identity: its diff text, so that editing the reasoning does not make it new."""
    return hashlib.sha256(patch.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Hypothesis:
    title: str
    patch: str
    hypothesis: str | None = None
    mechanism: str | None = None
    expected_effect: str | None = None
    source: str | None = None

    @property
    def sha256(self) -> str:
        return patch_sha256(self.patch)


class Proposer(Protocol):
    """A source of hypotheses. `tried` holds the patch hashes the session has already run."""

    name: str

    def next(self, tried: set[str]) -> Hypothesis | None:
        """The next hypothesis not yet tried, or None when there are no more."""
        ...

    def pending(self, tried: set[str]) -> int:
        """How many hypotheses are left (for progress)."""
        ...
