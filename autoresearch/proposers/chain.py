"""Several proposers in order: the queue first, then sweeps, then an agent.

Each is asked in turn; the first with a hypothesis gives it. An error inside a proposer (a bad
file, a knob pattern that no longer matches after a kept patch, a bug in a plug-in) is a
warning and that proposer is skipped for this experiment, never the end of the night.
"""

from __future__ import annotations

import dataclasses

from .base import Hypothesis, ProposalContext, Proposer

__all__ = ["ProposerChain"]

MAX_ERRORS = 3  # a proposer failing this many times in a row is set aside for the run


class ProposerChain:
    name = "chain"

    def __init__(self, proposers: list[Proposer]):
        self.proposers = proposers
        self.errors = {id(p): 0 for p in proposers}

    def next(self, context: ProposalContext) -> Hypothesis | None:
        asking = self._active()
        while asking:
            failed = []
            for proposer in asking:
                try:
                    hypothesis = proposer.next(context)
                except Exception as exc:  # a plug-in's bug must not end the night
                    self._failed(proposer, context, exc)
                    failed.append(proposer)
                    continue
                self.errors[id(proposer)] = 0
                if hypothesis is not None:
                    named = hypothesis.proposer or proposer.name
                    return dataclasses.replace(hypothesis, proposer=named)
            # Nobody had one: "nothing left" would end the night, so the ones that failed are
            # asked again until they answer or are set aside (MAX_ERRORS in a row).
            asking = [p for p in failed if self.errors[id(p)] < MAX_ERRORS]
        return None

    def pending(self, context: ProposalContext) -> int | None:
        """Proposals left across the chain; None when one of them cannot say (a search)."""
        total = 0
        for proposer in self._active():
            try:
                mine = proposer.pending(context)
            except Exception:  # counted for progress only; next() reports the error
                continue
            if mine is None:
                return None
            total += mine
        return total

    def close(self) -> None:
        """The night is over: proposers that work in the background stop."""
        for proposer in self.proposers:
            close = getattr(proposer, "close", None)
            if close is not None:
                try:
                    close()
                except Exception:  # closing is best effort; the run is ending anyway
                    continue

    def _active(self) -> list[Proposer]:
        return [p for p in self.proposers if self.errors[id(p)] < MAX_ERRORS]

    def _failed(self, proposer: Proposer, context: ProposalContext, exc: Exception) -> None:
        self.errors[id(proposer)] += 1
        aside = self.errors[id(proposer)] >= MAX_ERRORS
        context.notes.append(
            f"proposer '{proposer.name}' failed: {exc}"
            + (f" ({MAX_ERRORS} times in a row: set aside for this run)" if aside else "")
        )
