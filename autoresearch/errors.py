"""The one error family the CLI turns into `error: ...` and exit code 1."""


class UserError(Exception):
    """Something the user can fix: a bad config, a missing script, a busy session."""


class ConfigError(UserError):
    """The session config is missing, malformed, or names something that does not exist."""


class MetricParseError(UserError):
    """A bench printed a METRIC line that is not `METRIC name=<finite number>`."""


class JournalError(UserError):
    """The journal cannot be read as a whole (a newer schema, an unreadable file)."""


class NewerSchemaError(JournalError):
    """A journal line written by a newer autoresearch: never skipped as damage, never rewritten."""


class SessionBusyError(UserError):
    """Another loop holds the session lock."""


class WorkspaceError(UserError):
    """The target repository or the session worktree is not in a usable state."""


class StateError(UserError):
    """The session's state (marker, logs, lock) cannot be written: a full disk, permissions."""


class PreflightError(UserError):
    """The night cannot start: the base commit's bench or checks say it would be wasted."""
