"""Where hypotheses come from. A queue of patch files first; others plug in behind Proposer."""

from pathlib import Path

from ..config import Config
from .base import Hypothesis, Proposer, patch_sha256
from .queue import QueueProposer, parse_patch_file, read_hypothesis

__all__ = [
    "Hypothesis",
    "Proposer",
    "QueueProposer",
    "make_proposer",
    "parse_patch_file",
    "patch_sha256",
    "read_hypothesis",
]


def make_proposer(config: Config) -> Proposer:
    """The proposer a config names; its directory is relative to the config file."""
    return QueueProposer(Path(config.resolve(config.proposer.dir)))
