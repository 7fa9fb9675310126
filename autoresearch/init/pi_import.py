"""`autoresearch init --from-pi`: a pi-autoresearch session becomes an autoresearch session.

pi-autoresearch keeps a session in a few files beside the code, in one of two layouts: the
original one at the repository's root (autoresearch.jsonl, autoresearch.sh,
autoresearch.checks.sh, autoresearch.ideas.md, autoresearch.md) and the newer `.auto/`
directory (log.jsonl, measure.sh, checks.sh, ideas.md, prompt.md). Its bench script already
prints `METRIC name=value` lines, so it becomes the session's bench as it is; its checks
script becomes the checks; its ideas join ideas.md; its log goes into the journal whole, as
one import record, so that `report` and `pr` show the old runs beside the new ones.

The old figures are history, never the new session's baseline: they were measured once per
change, maybe on another machine, and the last kept change is not always the last logged one.
The session measures its own baseline at the repository's HEAD before its first experiment.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from ..errors import UserError
from ..journal.records import ImportRecord
from ..journal.store import append_record, read_journal
from ..repo.gitrepo import Repo, open_repo
from ..report.history import pi_config, pi_history, read_pi_log
from ..statuses import Status
from .scaffold import scaffold

__all__ = ["PiSession", "find_pi_session", "import_pi"]

# Layout -> file role -> path relative to the directory the layout lives in.
LAYOUTS = {
    ".auto": {
        "log": ".auto/log.jsonl",
        "bench": ".auto/measure.sh",
        "checks": ".auto/checks.sh",
        "ideas": ".auto/ideas.md",
        "notes": ".auto/prompt.md",
    },
    "root": {
        "log": "autoresearch.jsonl",
        "bench": "autoresearch.sh",
        "checks": "autoresearch.checks.sh",
        "ideas": "autoresearch.ideas.md",
        "notes": "autoresearch.md",
    },
}
# The pi session's own files: the agent's harness, which a patch may not touch.
PROTECT = {".auto": (".auto/**",), "root": ("autoresearch.*", "autoresearch.hooks/**")}


@dataclass(frozen=True)
class PiSession:
    """Where a pi-autoresearch session's files are; a missing optional file is None."""

    root: Path  # the directory the session lives in (its paths are relative to it)
    layout: str
    log: Path
    bench: Path | None
    checks: Path | None
    ideas: Path | None
    notes: Path | None


def find_pi_session(directory: Path, log: Path | None = None) -> PiSession:
    """The session in `directory`, or the one whose log is `log`."""
    if log is not None:
        log = log.resolve()
        if not log.is_file():
            raise UserError(f"{log}: no such pi-autoresearch log")
        layout = ".auto" if log.parent.name == ".auto" else "root"
        root = log.parent.parent if layout == ".auto" else log.parent
    else:
        found = [
            (name, files) for name, files in LAYOUTS.items() if (directory / files["log"]).is_file()
        ]
        if not found:
            looked = " and ".join(files["log"] for files in LAYOUTS.values())
            raise UserError(
                f"{directory}: no pi-autoresearch session here (looked for {looked}); "
                "pass --from-pi PATH to name its log"
            )
        layout, root = found[0][0], directory
        log = directory / found[0][1]["log"]

    def optional(role: str) -> Path | None:
        path = root / LAYOUTS[layout][role]
        return path if path.is_file() else None

    return PiSession(
        root=root,
        layout=layout,
        log=log,
        bench=optional("bench"),
        checks=optional("checks"),
        ideas=optional("ideas"),
        notes=optional("notes"),
    )


def import_pi(
    directory: Path,
    *,
    log: Path | None = None,
    session: str = "main",
    metric: str | None = None,
    direction: str | None = None,
    unit: str | None = None,
    scope: list[str] | None = None,
    force: bool = False,
) -> list[str]:
    """Write the session's config and ideas and import the log into its journal; the lines
    returned say what was done and what to do next."""
    pi = _usable_session(directory, log)
    objects, warnings = read_pi_log(pi.log)
    config = pi_config(objects)
    history = pi_history(objects, str(pi.log), warnings)  # refuses a log with no runs
    metric, direction, unit = _metric(pi.log, config, metric, direction, unit)
    journal = directory / "experiments.jsonl"
    digest = hashlib.sha256(pi.log.read_bytes()).hexdigest()
    already = _imported_before(journal, pi.log, digest, force)
    repo = open_repo(directory)
    scope, scope_note = _scope(repo, history, scope)
    kept = history.experiments[history.experiments["status"] == Status.KEEP]
    baseline_note = _baseline_note(repo, kept)
    written = scaffold(
        directory,
        session=session,
        metric=metric,
        direction=direction,
        unit=unit,
        scope=scope,
        force=force,
        bench=_command(directory, pi.bench),
        checks=_command(directory, pi.checks) if pi.checks else "",
        checks_when="keep" if pi.checks else "never",
        protect=PROTECT[pi.layout],
        only=("autoresearch.toml", "ideas.md", "hypothesis.patch.example"),
        ideas=_ideas(directory, pi),
    )
    if not already:
        source = os.path.relpath(pi.log, directory)
        append_record(journal, _import_record(session, source, digest, objects, warnings))
    lines = [f"wrote {p.relative_to(directory)}" for p in written]
    lines += [
        _imported_line(history, journal, warnings),
        f"metric {metric} ({direction} is better, {unit or 'no unit'}); bench "
        f"{_command(directory, pi.bench)}; checks "
        f"{_command(directory, pi.checks) if pi.checks else 'none (checks.when = never)'}",
        scope_note,
        baseline_note,
        "next: commit autoresearch.toml and ideas.md; then `autoresearch try` to judge a change "
        "or `autoresearch run` for a night; `autoresearch report` shows the imported runs",
    ]
    return lines


def _imported_before(journal: Path, log: Path, digest: str, force: bool) -> bool:
    """Whether the journal already holds this log; refused unless `force` rewrites the config."""
    already = any(r.source_sha256 == digest for r in read_journal(journal).imports)
    if already and not force:
        raise UserError(
            f"{journal}: {log.name} is already imported; pass --force to write the config "
            "and ideas again (the runs stay imported once)"
        )
    return already


def _import_record(session: str, source: str, digest: str, objects, warnings) -> ImportRecord:
    return ImportRecord(
        session=session,
        at=datetime.now(UTC).isoformat(timespec="seconds"),
        format="pi-autoresearch",
        source=source,
        source_sha256=digest,
        lines=objects,
        warnings=warnings,
    )


def _metric(log: Path, config: dict, metric, direction, unit) -> tuple[str, str, str]:
    """The primary metric, its direction and unit: as given, else as the log's config says."""
    metric = metric or config.get("metricName")
    if not metric:
        raise UserError(f"{log}: no config line names the metric; pass --metric NAME")
    direction = direction or config.get("bestDirection") or "lower"
    unit = unit if unit is not None else config.get("metricUnit", "")
    return metric, direction, unit


def _usable_session(directory: Path, log: Path | None):
    """The pi session in `directory`, refused with the fix when init cannot take it."""
    pi = find_pi_session(directory, log)
    if pi.root != directory:
        raise UserError(
            f"{pi.log}: the session's files are in {pi.root}; run init there "
            f"(autoresearch init {pi.root} --from-pi)"
        )
    if pi.bench is None:
        bench_name = LAYOUTS[pi.layout]["bench"]
        raise UserError(
            f"{directory}: no {bench_name} beside {pi.log.name}: pi-autoresearch benches with "
            f"whatever command its agent ran; write that command into {bench_name} (it must "
            "print the METRIC lines) and run init again"
        )
    return pi


def _imported_line(history, journal: Path, warnings: list[str]) -> str:
    counts = history.experiments["status"].value_counts()
    imported = (
        f"imported {len(history.experiments)} runs of '{history.name}' into {journal.name} "
        f"({', '.join(f'{s} {n}' for s, n in counts.items())})"
    )
    if warnings:
        imported += f"; {len(warnings)} line(s) of the log skipped: {warnings[0]}"
    return imported


def _command(directory: Path, script: Path) -> str:
    return "./" + script.relative_to(directory).as_posix()


def _scope(repo: Repo, history, given: list[str] | None) -> tuple[list[str], str]:
    """What a patch may touch: as given, else the directories the old session's kept commits
    touched (when they are in this repository), else everything but the harness."""
    if given:
        return given, f"scope: {', '.join(given)} (as given)"
    touched: set[str] = set()
    found = 0
    for commit in history.experiments.loc[history.experiments["status"] == Status.KEEP, "commit"]:
        sha = repo.resolve(str(commit))  # None: a commit of another clone, or none at all
        if sha is None:
            continue
        found += 1
        names = repo.must("show", "--name-only", "--format=", sha).splitlines()
        touched |= {
            (str(Path(n).parent) + "/**") if Path(n).parent != Path(".") else n
            for n in names
            if n and not n.startswith(("autoresearch.", ".auto/"))
        }
    if touched:
        return sorted(touched), (
            f"scope: {', '.join(sorted(touched))} (what the {found} kept commits found in this "
            "repository touched; widen [scope] include if the next ideas reach further)"
        )
    return ["**"], (
        "scope: ** (none of the log's kept commits is in this repository; patches may touch "
        "anything but the harness: narrow [scope] include)"
    )


def _ideas(directory: Path, pi: PiSession) -> str:
    """The old session's ideas as open ideas, and a pointer to its notes."""
    lines = []
    if pi.ideas:
        for line in pi.ideas.read_text(encoding="utf-8", errors="replace").splitlines():
            stripped = line.strip()
            if stripped.startswith(("- ", "* ")) and stripped[2:].strip():
                lines.append(f"- {stripped[2:].strip()}")
    if pi.notes:
        lines.append(
            f"- (the pi-autoresearch session's notes: {pi.notes.relative_to(directory)}; what "
            "it tried is in the imported runs)"
        )
    return "\n".join(lines) + "\n" if lines else ""


def _baseline_note(repo: Repo, kept) -> str:
    """Where the new session's baseline comes from, and how HEAD relates to the old keeps."""
    head = repo.head()
    note = (
        f"baseline: measured afresh at HEAD {head[:12]} by the first `try` or `run`; the "
        "imported figures are history (one run each, on the machine of the day)"
    )
    if not len(kept):
        return note
    last = str(kept.iloc[-1]["commit"])
    resolved = repo.resolve(last)
    if resolved is None:
        return note + f"; the last kept commit of the log ({last}) is not in this repository"
    if resolved == head:
        return note + f"; HEAD is the last kept commit of the log ({last})"
    if repo.run("merge-base", "--is-ancestor", resolved, head).ok:
        ahead = int(repo.must("rev-list", "--count", f"{resolved}..{head}").strip())
        return note + (
            f"; HEAD is {ahead} commit(s) past the last kept commit of the log ({last}): "
            "changes made after it are part of the baseline"
        )
    return note + f"; HEAD does not contain the last kept commit of the log ({last})"
