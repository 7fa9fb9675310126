"""autoresearch: unattended performance-optimization loops.

A driver takes hypotheses (a patch plus its reasoning), applies each to a target git repository,
measures it with the target's bench, gates it with the target's checks, keeps it as a commit on
a session branch or reverts it, and journals one structured record per experiment.

The public API is re-exported lazily (PEP 562): `autoresearch --help`, `status` and a signal
arriving while the CLI starts should not wait for scipy and the loop to import.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "SCHEMA_VERSION": "journal.records",
    "STATUSES": "journal.records",
    "Config": "config",
    "ConfigError": "errors",
    "Decision": "decide.rule",
    "ExperimentRecord": "journal.records",
    "Journal": "journal.store",
    "JournalError": "errors",
    "Judge": "decide.rule",
    "MetricParseError": "errors",
    "RunOptions": "loop.session",
    "RunResult": "bench.proc",
    "SessionOutcome": "loop.stages",
    "UserError": "errors",
    "WorkspaceError": "errors",
    "load_config": "config",
    "parse_go_bench": "bench.formats",
    "parse_metrics": "bench.metrics",
    "read_journal": "journal.store",
    "run_session": "loop.driver",
}

__all__ = sorted(_EXPORTS)
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'autoresearch' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])
