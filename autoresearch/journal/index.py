"""The review index: a compact, append-only digest of a journal, so that reviewing 100,000
experiments does not mean parsing every run's samples again.

It sits in the journal's derived directory (`derived_dir`: one place for everything derived from
the journal, outside your checkout, which an agent's sandbox covers whole) and is derived data,
never authoritative: each entry notes the journal offset it covers, the header holds a hash of the
journal's first bytes, and anything that does not line up (a rewritten or truncated journal,
a damaged index, another version) makes it rebuild from the journal. Refreshing reads only
the journal bytes past the last indexed offset, so the loop keeps it current after each append
at the cost of one line. The journal is append-only: a line edited in place is not noticed
until the index is deleted.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from ..atomic import flock_within
from ..errors import JournalError
from ..files import common_git_dir
from .evidence import primary_metric
from .lines import duplicate_warning, gc_paused, parse_lines, torn_line_warning

__all__ = [
    "INDEX_VERSION",
    "IndexedJournal",
    "derived_dir",
    "experiment_row",
    "index_path",
    "refresh_index",
    "update_index",
]

INDEX_VERSION = 7  # 2: rows carry retry_of, proposal, parent; 3: proposer, family, agent cost;
# 4: import records; 5: the patch's hash (a resume reads its attempts from the summary);
# 6: the win each decision's futility stops were built for, and their power; 7: the bench
# hosts lost while they measured it
HEAD_BYTES = 4096
UNNAMED_HOST = "a bench host"  # one lost that its executor could not name


@dataclass
class IndexedJournal:
    """An index read whole: experiment rows, and the rest whole (what a fold reads from
    memory when the index cannot be written)."""

    sessions: list[dict[str, Any]] = field(default_factory=list)
    calibrations: list[dict[str, Any]] = field(default_factory=list)
    confirmations: list[dict[str, Any]] = field(default_factory=list)
    experiments: list[dict[str, Any]] = field(default_factory=list)
    imports: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def derived_dir(journal: Path) -> Path:
    """Where what is derived from `journal` lives: one directory of its own, outside your
    checkout (in the git directory of the repository holding the journal, beside the sessions'
    state; else in your cache), named by the journal's path, so that two journals never share
    one. Rebuilt from the journal whenever it is missing."""
    path = journal.resolve()
    key = hashlib.sha256(os.fsencode(path)).hexdigest()[:12]
    git_dir = common_git_dir(path.parent)
    root = git_dir / DERIVED_IN_GIT if git_dir is not None else _cache_home() / DERIVED_IN_CACHE
    return root / f"{path.name}-{key}"


def _forget_beside(journal: Path) -> None:
    """What earlier versions kept beside the journal, in your checkout (`.<journal>.d/`): the
    same data, rebuilt in `derived_dir` now. Removed when it holds nothing but that."""
    old = journal.with_name(f".{journal.name}.d")
    with contextlib.suppress(OSError):
        if old.is_dir() and {p.name.removesuffix(".tmp") for p in old.iterdir()} <= OLD_FILES:
            shutil.rmtree(old)


def _cache_home() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")


DERIVED_IN_GIT = "autoresearch.journals"  # beside `autoresearch/`, the sessions' state
DERIVED_IN_CACHE = "autoresearch/journals"
OLD_FILES = {"index", "summary", "columns"}  # what `.<journal>.d/` held beside the journal
LOCK = "index.lock"  # held while the index is brought up to date (_updating)


def index_path(journal: Path) -> Path:
    return derived_dir(journal) / "index"


def refresh_index(journal: Path) -> IndexedJournal:
    """Bring the index up to date with the journal and return its contents.

    When the index cannot be written (a read-only directory) the journal is digested in memory.
    """
    with gc_paused():
        entries, torn, _ = _update(journal, load=True)
    contents = IndexedJournal()
    buckets = {
        "session": contents.sessions,
        "calibration": contents.calibrations,
        "confirmation": contents.confirmations,
        "experiment": contents.experiments,
        "import": contents.imports,
    }
    seen: dict[tuple, int] = {}
    for entry in entries:
        if entry["t"] == "warning":
            contents.warnings.append(entry["w"])
        elif duplicate := duplicate_warning(journal, seen, entry["t"], entry["d"], entry["l"]):
            contents.warnings.append(duplicate)
        else:
            buckets[entry["t"]].append(entry["d"])
    if torn:
        contents.warnings.append(torn)
    return contents


def update_index(journal: Path) -> None:
    """Index what the journal gained since the last call: after an append, one line."""
    # Derived data: when this fails, the next review rebuilds it from the journal.
    with contextlib.suppress(OSError, JournalError):
        _update(journal, load=False)


def catch_up(journal: Path) -> tuple[bool, str | None]:
    """Index what the journal gained; whether the index file now covers every complete line
    (not when it could not be written), and the warning for a torn last line."""
    _, torn, written = _update(journal, load=False)
    return written, torn


def _update(journal: Path, load: bool) -> tuple[list[dict], str | None, bool]:
    """Index the journal's new complete lines; returns all entries when `load`, a warning for
    a torn last line (not indexed: a crash may have cut it, or a writer may finish it), and
    whether the index file holds them all."""
    path = index_path(journal)
    with _updating(path) as alone:
        try:
            with open(journal, "rb") as handle:
                head = hashlib.sha256(handle.read(HEAD_BYTES)).hexdigest()
                size = os.fstat(handle.fileno()).st_size
                entries, offset, lineno = _read_index(path, head, size, load)
                handle.seek(offset)
                tail = handle.read()
        except OSError as exc:
            raise JournalError(f"{journal}: cannot read: {exc.strerror}") from None
        new, consumed, lineno = _digest(journal, tail, offset, lineno)
        if new and offset == 0:
            _forget_beside(journal)
        if not alone:  # another process holds the index this long: ours are used from memory
            written = not new and path.exists()
        else:
            written = _write_index(path, head, new, rebuild=offset == 0) if new else path.exists()
    return entries + new, torn_line_warning(journal, tail[consumed - offset :], lineno), written


# How long a reader waits for another process bringing the index up to date (milliseconds, a
# season's first build a few seconds) before it digests the journal in memory instead.
UPDATE_WAIT_S = 30.0


@contextlib.contextmanager
def _updating(path: Path) -> Iterator[bool]:
    """One process at a time reads where the index ends and appends what follows: two at once
    (the loop appending, `status` or the review page reading) would both append the journal's
    new lines, and every fold would count them twice. Yields whether this one holds the lock
    (a directory where the lock cannot be made cannot take the index either: it is False)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path.with_name(LOCK), os.O_RDWR | os.O_CREAT, 0o644)
    except OSError:
        yield False
        return
    try:
        yield flock_within(fd, UPDATE_WAIT_S)
    finally:
        os.close(fd)  # closing drops the lock


def _read_index(path: Path, head: str, size: int, load: bool) -> tuple[list[dict], int, int]:
    """The index's entries (when `load`), the journal offset they cover and the next line
    number; nothing at all when the index does not match the journal."""
    try:
        with open(path, "rb") as handle:
            header = orjson.loads(handle.readline())
            if load:
                entries = [orjson.loads(line) for line in handle.read().splitlines()]
                last = entries[-1] if entries else None
            else:
                entries, last = [], _last_line(handle)
    except (OSError, orjson.JSONDecodeError):
        return [], 0, 1
    if header.get("index_version") != INDEX_VERSION or header.get("head") != head:
        return [], 0, 1
    if last is None:
        return entries, 0, 1
    if last["o"] > size:
        return [], 0, 1
    return entries, last["o"], last["l"] + 1


def _last_line(handle) -> dict | None:
    """The last entry of an index file, read from its end."""
    end = handle.seek(0, os.SEEK_END)
    block = min(end, 65536)
    handle.seek(end - block)
    lines = handle.read(block).rstrip(b"\n").rsplit(b"\n", 1)
    return orjson.loads(lines[-1]) if lines and lines[-1].startswith(b'{"o"') else None


def _digest(journal: Path, tail: bytes, offset: int, lineno: int) -> tuple[list[dict], int, int]:
    """Index entries for the complete lines of `tail`, which starts at journal `offset`."""
    items, consumed, lineno = parse_lines(journal, tail, offset, lineno)
    entries = []
    for line, end, item in items:
        entry: dict[str, Any] = {"o": end, "l": line}
        if isinstance(item, str):
            entries.append(entry | {"t": "warning", "w": item})
            continue
        entries.append(entry | {"t": item.kind, "d": index_payload(item.kind, item.to_dict())})
    return entries, consumed, lineno


def index_payload(kind: str, record: dict[str, Any]) -> dict[str, Any]:
    """What the index keeps of a record of `kind`: all of it, an experiment's without its raw
    samples (`experiment_row`)."""
    return experiment_row(record) if kind == "experiment" else record


def experiment_row(record: dict[str, Any]) -> dict[str, Any]:
    """What the review needs of an experiment record: everything but the raw samples."""
    decision = record.get("decision") or {}
    metrics = decision.get("metrics", {})
    sentinels = record.get("sentinels") or {}
    checks = record.get("checks") or {}
    asi = record.get("asi") or {}
    primary = primary_metric(decision) or {}
    durations = record.get("bench_durations_s") or []
    agent = record.get("agent") or {}
    usage = agent.get("usage") or {}
    return {
        "n": record["n"],
        "id": record["id"],
        "retry_of": record.get("retry_of"),
        "patch": record.get("patch_sha256"),
        "proposal": record.get("proposal"),
        "proposer": record.get("proposer"),
        "family": record.get("family"),
        # An agent's proposal: its cost (None when it did not say) and why it was refused.
        "agent": bool(agent),
        "agent_cost_usd": usage.get("cost_usd"),
        "refusal": agent.get("refusal"),
        "parent": record.get("parent_commit"),
        "session": record["session"],
        "segment": 0,
        "status": record["status"],
        "title": record["title"],
        "description": asi.get("result") or record.get("error"),
        "value": primary.get("candidate_median"),
        "change_pct": primary.get("change_pct"),
        "ci_low_pct": primary.get("ci_low_pct"),
        "ci_high_pct": primary.get("ci_high_pct"),
        "p_value": primary.get("p_better"),
        "designed_for_pct": decision.get("designed_for_pct"),
        "designed_power": decision.get("designed_power"),
        "rule": decision.get("rule") or record["status"],
        "reason": decision.get("reason") or record.get("error"),
        "hypothesis": asi.get("hypothesis"),
        "mechanism": asi.get("mechanism"),
        "rollback_reason": asi.get("rollback_reason"),
        "next_action_hint": asi.get("next_action_hint"),
        "commit": record.get("kept_commit"),
        "started_at": record.get("started_at"),
        "duration_s": record.get("duration_s"),
        "bench_runs": len(durations),
        "bench_s": sum(durations),
        "checks_s": checks.get("duration_s") or 0.0,
        "checks_exit": checks.get("exit_code"),
        "touched_files": record.get("touched_files") or [],
        "hosts_lost": [lost.get("host") or UNNAMED_HOST for lost in _lost(record)],
        "sentinels_ok": all(s.get("ok") for s in sentinels.values()),
        "holdout_change_pct": (decision.get("holdout") or {}).get("change_pct"),
        "holdout_verdict": (decision.get("holdout") or {}).get("verdict"),
        "metrics": {name: m.get("candidate_median") for name, m in metrics.items()}
        | {name: s.get("candidate_median") for name, s in sentinels.items()},
    }


def _lost(record: dict[str, Any]) -> list[dict[str, Any]]:
    """The bench hosts that died while they measured the experiment (its record's cluster)."""
    lost = (record.get("cluster") or {}).get("lost") or []
    return [entry for entry in lost if isinstance(entry, dict)]


def _write_index(path: Path, head: str, new: list[dict], rebuild: bool) -> bool:
    lines = b"".join(orjson.dumps(e) + b"\n" for e in new)
    try:
        if rebuild:  # appended to, the index (and its directory) is there already
            path.parent.mkdir(parents=True, exist_ok=True)
            header = orjson.dumps({"index_version": INDEX_VERSION, "head": head}) + b"\n"
            tmp = path.with_name(path.name + ".tmp")
            tmp.write_bytes(header + lines)
            os.replace(tmp, path)
        else:
            with open(path, "ab") as handle:
                size = handle.tell()
                try:
                    handle.write(lines)
                    handle.flush()
                except OSError:
                    handle.truncate(size)  # a partial entry would make the next read rebuild
                    raise
        return True
    except OSError:
        # A read-only directory or a full disk: the digest is used from memory this time.
        if rebuild:
            with contextlib.suppress(OSError):
                path.with_name(path.name + ".tmp").unlink()
        return False
