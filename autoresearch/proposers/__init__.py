"""Where hypotheses come from: proposers found by name (../plugins.py), chained in order."""

from ..config import Config
from ..plugins import ENTRY_POINT_GROUP
from .base import Hypothesis, ProposalContext, Proposer, ProposerError, patch_sha256
from .chain import ProposerChain
from .queue import QueueProposer, parse_patch_file, read_hypothesis
from .registry import make_proposers

__all__ = [
    "ENTRY_POINT_GROUP",
    "Hypothesis",
    "ProposalContext",
    "Proposer",
    "ProposerChain",
    "ProposerError",
    "QueueProposer",
    "make_proposer",
    "parse_patch_file",
    "patch_sha256",
    "read_hypothesis",
]


def make_proposer(config: Config) -> ProposerChain:
    """The session's proposers, in the order its config lists them."""
    return ProposerChain(make_proposers(config))
