"""autoresearch: unattended performance-optimization loops.

A driver takes hypotheses (a patch plus its reasoning), applies each to a target git repository,
measures it with the target's bench, gates it with the target's checks, keeps it as a commit on
a session branch or reverts it, and journals one structured record per experiment.
"""

from .config import Config, load_config
from .decide import Decision, Judge
from .errors import ConfigError, JournalError, MetricParseError, UserError, WorkspaceError
from .journal import Journal, read_journal
from .loop import SessionOutcome, run_session
from .metrics import parse_go_bench, parse_metrics
from .proc import RunResult
from .records import SCHEMA_VERSION, STATUSES, ExperimentRecord
from .session import RunOptions

__all__ = [
    "SCHEMA_VERSION",
    "STATUSES",
    "Config",
    "ConfigError",
    "Decision",
    "ExperimentRecord",
    "Journal",
    "JournalError",
    "Judge",
    "MetricParseError",
    "RunOptions",
    "RunResult",
    "SessionOutcome",
    "UserError",
    "WorkspaceError",
    "load_config",
    "parse_go_bench",
    "parse_metrics",
    "read_journal",
    "run_session",
]

__version__ = "0.1.0"
