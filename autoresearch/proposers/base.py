"""What every proposer hands the loop: a hypothesis, a patch plus its reasoning."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Protocol

__all__ = ["Hypothesis", "Proposer", "patch_sha256"]


def patch_sha256(patch: bytes) -> str:
    """A patch's identity: its diff bytes, so that editing the reasoning does not make it new."""
    return hashlib.sha256(patch).hexdigest()


@dataclass(frozen=True)
class Hypothesis:
    """A patch and its reasoning. The patch is bytes, applied as it is: a CRLF line or a lone
    carriage return is content, and so is a file in another encoding.

    `problem` says why a hypothesis cannot be tried at all (an unreadable file, a broken
    sidecar): the loop records it as such, costs no bench run, and goes on with the night.
    """

    title: str
    patch: bytes
    hypothesis: str | None = None
    mechanism: str | None = None
    expected_effect: str | None = None
    source: str | None = None
    problem: str | None = None

    @property
    def sha256(self) -> str:
        if self.problem is not None:  # what it failed on identifies it: fixed, it is new
            return patch_sha256(b"invalid\0" + self.problem.encode() + b"\0" + self.patch)
        return patch_sha256(self.patch)

    @property
    def text(self) -> str:
        """The patch as text for reading its headers; undecodable bytes kept as escapes."""
        return self.patch.decode("utf-8", errors="surrogateescape")


class Proposer(Protocol):
    """A source of hypotheses. `tried` holds the patch hashes the session has already run."""

    name: str

    def next(self, tried: set[str]) -> Hypothesis | None:
        """The next hypothesis not yet tried, or None when there are no more."""
        ...

    def pending(self, tried: set[str]) -> int:
        """How many hypotheses are left (for progress)."""
        ...
