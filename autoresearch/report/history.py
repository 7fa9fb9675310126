"""A journal as one table: autoresearch journals and pi-autoresearch logs read into the same frame.

One row per experiment, in order, with the primary metric's value, the change it was judged by,
the status and the reasoning. What the review commands need besides (the baseline and where it
came from, the final state, the confirmation, the config) sits beside the frame.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pandas as pd

from ..decide.headline import baseline_calibration, headline, session_metric
from ..errors import JournalError
from ..journal.columns import review_table
from ..journal.records import is_headline
from ..statuses import Status
from .frame import COLUMNS, typed

__all__ = ["History", "load_history"]

_ESCAPE = re.compile(r"\\u([0-9a-fA-F]{4})")


@dataclass
class History:
    """Everything a review needs from one session's journal."""

    source: str
    format: str  # "autoresearch" or "pi-autoresearch"
    name: str
    metric: str
    unit: str
    direction: str
    experiments: pd.DataFrame
    baseline: dict[str, Any]  # value, metrics, label, why
    final: dict[str, Any]  # value, metrics, label
    confirmation: dict[str, Any] | None = None
    fallback_from: str | None = None  # the primary, when the session decided on its fallback
    config: dict[str, Any] = field(default_factory=dict)
    calibrations: list[dict[str, Any]] = field(default_factory=list)
    confirmations: list[dict[str, Any]] = field(default_factory=list)
    baseline_log: str | None = None
    final_log: str | None = None
    warnings: list[str] = field(default_factory=list)
    # Sessions of another tool imported as history before this one (`init --from-pi`).
    imported: list[History] = field(default_factory=list)
    # One branch `finalize` cut (branch_history): its runs are its experiments' and its own
    # confirmations', not the session's calibrations and headline confirmations.
    branch: str | None = None
    # Where and when it ran: the last session line's machine, and when the session started.
    environment: dict[str, Any] = field(default_factory=dict)

    @property
    def lower_is_better(self) -> bool:
        return self.direction == "lower"


def load_history(path: Path, session: str | None = None) -> History:
    """Read a journal of either format; `session` picks one of several in an autoresearch one."""
    if not path.is_file():
        raise JournalError(f"{path}: journal not found")
    first = _first_object(path)
    if first.get("type") == "config" or "run" in first:
        return _from_pi(path)
    return _from_autoresearch(path, session)


def _first_object(path: Path) -> dict[str, Any]:
    with open(path, encoding="utf-8-sig", errors="replace") as handle:
        for line in handle:
            if line.strip():
                try:
                    data = json.loads(line)
                except json.JSONDecodeError:
                    raise JournalError(f"{path}:1: not JSON; is this a journal?") from None
                return data if isinstance(data, dict) else {}
    raise JournalError(f"{path}: journal is empty")


# -- autoresearch journals ---------------------------------------------------------------------


def _from_autoresearch(path: Path, session: str | None) -> History:
    index = review_table(path)
    names = list(dict.fromkeys(s["session"] for s in index.sessions))
    if not names:
        imports = [i for i in index.imports if session in (None, i["session"])]
        if imports:  # imported, nothing run yet: the imported session is the whole story
            history = _imported(imports[-1])
            history.source += f", imported into {path.name}"
            history.warnings = [*index.warnings, *history.warnings]
            return history
        raise JournalError(f"{path}: no session line; nothing to report")
    if session is None:
        session = names[-1]
    elif session not in names:
        raise JournalError(f"{path}: no session '{session}' (sessions: {', '.join(names)})")
    sessions, calibrations, confirmations, imports = (
        [item for item in items if item["session"] == session]
        for items in (index.sessions, index.calibrations, index.confirmations, index.imports)
    )
    config = sessions[0]["config"]
    metric = config["metric"]
    switched = session_metric(metric, calibrations) != metric["name"]
    metric = {**metric, "name": metric["fallback"]} if switched else metric
    spec_of = {m["name"]: m for m in [metric, *config["secondary"], *config["sentinel"]]}
    frame = typed(_session_frame(index.experiments, session))
    kept = frame["commit"][(frame["status"] == Status.KEEP) & frame["commit"].astype(bool)]
    tip = kept.iloc[-1] if len(kept) else sessions[0]["base_commit"]
    head = headline(calibrations, confirmations, tip, metric["name"], sessions[0]["base_commit"])
    baseline, final = _ends(head, calibrations, sessions[0]["base_commit"], metric["name"], tip)
    own = [c for c in confirmations if is_headline(c)]  # not a branch's, not a contribution
    confirmation = _confirmation(own[-1]) if own else None
    return History(
        source=str(path),
        format="autoresearch",
        name=session,
        metric=metric["name"],
        unit=metric.get("unit", ""),
        direction=metric.get("direction", "lower"),
        experiments=frame,
        baseline=baseline,
        final=final,
        confirmation=confirmation,
        fallback_from=config["metric"]["name"] if switched else None,
        config={**config, "units": {k: v.get("unit", "") for k, v in spec_of.items()}},
        calibrations=calibrations,
        confirmations=confirmations,
        baseline_log=head["baseline_log"],
        final_log=head["best_log"],
        warnings=index.warnings,
        imported=[_imported(i) for i in imports],
        environment={
            **(sessions[-1].get("environment") or {}),
            "started_at": sessions[0].get("at"),
            "base_commit": sessions[0]["base_commit"],
            "tip_commit": tip,
        },
    )


def branch_history(
    history: History, branch: str, tip: str, commits: set[str], files: set[str]
) -> History:
    """The review of one branch `finalize` cut: its keeps (`commits`, the session's), the
    experiments not kept that touched its files, and its own headline (its confirmation, when
    `finalize --confirm` measured it)."""
    frame = history.experiments
    touched = frame["touched_files"].map(lambda paths: bool(set(paths or ()) & files))
    kept = frame["status"] == Status.KEEP
    rows = frame[(kept & frame["commit"].isin(commits)) | (~kept & touched)]
    base = history.baseline["commit"]
    head = headline(history.calibrations, history.confirmations, tip, history.metric, base)
    baseline, final = _ends(head, history.calibrations, base, history.metric, tip)
    own = [c for c in history.confirmations if c.get("branch") == branch]
    return replace(
        history,
        name=f"{history.name}: {branch}",
        experiments=rows.reset_index(drop=True),
        baseline=baseline,
        final=final,
        confirmation=_confirmation(own[-1]) if own else None,
        baseline_log=head["baseline_log"],
        final_log=head["best_log"],
        branch=branch,
    )


def _session_frame(columns: dict[str, list], session: str) -> pd.DataFrame:
    """The session's experiment rows, in journal order, with the review's columns. The rows
    and columns are chosen in the lists, before pandas sees them (a frame of every column,
    filtered and reindexed afterwards, holds three copies of 100,000 rows at once), and each
    list is taken out of `columns` as it goes in: the frame holds the values from then on."""
    rows = len(columns.get("id", ()))
    owner = columns.get("session")
    picked = None if owner is None else [i for i, s in enumerate(owner) if s == session]
    if picked is not None and len(picked) == rows:
        picked = None  # one session's journal, the usual case: every row as it is
    frame = pd.DataFrame(index=range(rows if picked is None else len(picked)))
    for name in COLUMNS:
        values = columns.pop(name, None)
        if values is None:  # a field no row has: NaN, as pandas reindexes a missing column
            frame[name] = float("nan")
        else:
            frame[name] = values if picked is None else [values[i] for i in picked]
    return frame


def _ends(head: dict, calibrations, base: str, metric: str, tip: str) -> tuple[dict, dict]:
    """The baseline and the final best as the review shows them, with where each comes from."""
    first = baseline_calibration(calibrations, base)
    baseline = {
        "value": head["baseline"],
        "metrics": head["baseline_metrics"],
        "label": head["baseline_label"],
        "why": (
            f"{head['note']}"
            if head["source"] == "confirmation"
            else f"the median of {len(first['samples'].get(metric, []))} calibration "
            "runs of the session's base commit, before any experiment"
            if first
            else "no calibration was recorded"
        ),
        "commit": base,
    }
    final = {
        "value": head["best"],
        "metrics": head["best_metrics"],
        "label": head["best_label"],
        "commit": tip,
        "note": head["note"],
        "change_pct": head["change_pct"],
        "ci_low_pct": head["ci_low_pct"],
        "ci_high_pct": head["ci_high_pct"],
        "changes": head["changes"],
        "runs": head.get("runs"),
        "source": head["source"],
    }
    return baseline, final


CONFIRMATION_FIELDS = (
    "change_pct",
    "ci_low_pct",
    "ci_high_pct",
    "p_value",
    "runs_per_arm",
    "base_commit",
    "tip_commit",
    "metrics",
    "at",
)
# ... and what older records do not have.
CONFIRMATION_OPTIONAL = ("holdout",)


def _confirmation(record: dict[str, Any]) -> dict[str, Any]:
    found = {key: record[key] for key in CONFIRMATION_FIELDS}
    return found | {key: record.get(key) for key in CONFIRMATION_OPTIONAL}


def _imported(record: dict[str, Any]) -> History:
    return pi_history(record["lines"], record["source"], list(record.get("warnings") or []))


# -- pi-autoresearch logs ----------------------------------------------------------------------


def read_pi_log(path: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """A pi-autoresearch log's JSON objects in order, and why any line was skipped. A line
    repeated whole (a log concatenated with itself) counts once; hook entries are not runs."""
    objects: list[dict[str, Any]] = []
    warnings: list[str] = []
    seen: dict[bytes, int] = {}
    for lineno, raw in enumerate(path.read_bytes().split(b"\n"), start=1):
        if not raw.strip():
            continue
        if seen.setdefault(raw.strip(), lineno) != lineno:
            warnings.append(f"{path}:{lineno}: repeats line {seen[raw.strip()]}, skipped")
            continue
        try:
            data = json.loads(raw.decode("utf-8-sig", errors="replace"))
        except json.JSONDecodeError:
            warnings.append(f"{path}:{lineno}: not valid JSON, skipped")
            continue
        if not isinstance(data, dict):
            warnings.append(f"{path}:{lineno}: not a JSON object, skipped")
        elif data.get("type") == "config" or "run" in data:
            objects.append(data)
        elif data.get("type") != "hook":
            warnings.append(f"{path}:{lineno}: neither a config nor a run line, skipped")
    return objects, warnings


def pi_config(objects: list[dict[str, Any]]) -> dict[str, Any]:
    """The session's config: its last config line (a new segment may change the metric)."""
    configs = [o for o in objects if o.get("type") == "config"]
    return configs[-1] if configs else {}


def _from_pi(path: Path) -> History:
    objects, warnings = read_pi_log(path)
    return pi_history(objects, str(path), warnings)


def pi_history(objects: list[dict[str, Any]], source: str, warnings: list[str]) -> History:
    """A config line, then run lines: run, commit, metric, metrics, status, description, asi."""
    config = pi_config(objects)
    runs = [o for o in objects if "run" in o and o.get("type") != "config"]
    if not runs:
        raise JournalError(f"{source}: no run lines; nothing to report")
    metric = config.get("metricName") or "metric"
    direction = config.get("bestDirection", "lower")
    frame = typed(pd.DataFrame([_pi_row(r, metric) for r in runs], columns=COLUMNS))
    frame = _pi_changes(frame, direction)
    kept = frame[frame["status"] == Status.KEEP]
    base = kept.iloc[0] if len(kept) else frame.iloc[0]
    why = (
        f"run {int(base['n'])} is the first kept run: the first whose checks passed, the "
        "reference every later change was measured against"
        if len(kept)
        else f"no run was kept; run {int(base['n'])} is the first run"
    )
    if len(kept) and int(base["n"]) != int(frame.iloc[0]["n"]):
        earlier = frame[frame["n"] < base["n"]]
        why += (
            f" (run{'s' if len(earlier) > 1 else ''} "
            f"{', '.join(str(int(n)) for n in earlier['n'])} before it ended "
            f"{', '.join(sorted(set(earlier['status'])))})"
        )
    last = kept.iloc[-1] if len(kept) else base
    return History(
        source=source,
        format="pi-autoresearch",
        name=config.get("name") or Path(source).stem,
        metric=metric,
        unit=config.get("metricUnit", ""),
        direction=direction,
        experiments=frame,
        baseline={
            "value": base["value"],
            "metrics": base["metrics"],
            "label": f"run {int(base['n'])} ({base['commit']})",
            "why": why,
            "commit": base["commit"],
            "n": int(base["n"]),
        },
        final={
            "value": last["value"],
            "metrics": last["metrics"],
            "label": f"run {int(last['n'])} ({last['commit']})",
            "commit": last["commit"],
        },
        config={"units": {metric: config.get("metricUnit", "")}},
        warnings=warnings,
    )


def _pi_row(run: dict[str, Any], metric: str) -> dict[str, Any]:
    asi = run.get("asi") or {}
    description = _unescape(run.get("description") or "")
    title = description.split(". ")[0].split("\n")[0][:120]
    return {
        "n": run.get("run"),
        "id": str(run.get("run")),
        "segment": run.get("segment", 0),
        "status": run.get("status"),
        "title": title,
        "description": description,
        "value": run.get("metric"),
        "change_pct": None,
        "ci_low_pct": None,
        "ci_high_pct": None,
        "p_value": None,
        "designed_for_pct": None,
        "designed_power": None,
        "rule": run.get("status"),
        "reason": _unescape(asi.get("rollback_reason") or asi.get("result") or ""),
        "hypothesis": _unescape(asi.get("hypothesis") or ""),
        "mechanism": _unescape(asi.get("mechanism") or asi.get("mechanism_insight") or ""),
        "rollback_reason": _unescape(asi.get("rollback_reason") or "") or None,
        "next_action_hint": _unescape(asi.get("next_idea") or asi.get("next_action_hint") or "")
        or None,
        "commit": run.get("commit"),
        "started_at": pd.to_datetime(run.get("timestamp"), unit="ms", utc=True).isoformat()
        if run.get("timestamp")
        else None,
        "duration_s": None,
        "bench_runs": 1,
        "bench_s": None,
        "checks_s": None,
        "checks_exit": None,
        "touched_files": [],
        "hosts_lost": [],
        "sentinels_ok": True,
        "holdout_change_pct": None,
        "holdout_verdict": None,
        # The primary metric rides in its own field: put it beside the others.
        "metrics": {**(run.get("metrics") or {}), metric: run.get("metric")},
    }


def _pi_changes(frame: pd.DataFrame, direction: str) -> pd.DataFrame:
    """Each run's change against the best kept value before it, within its segment."""
    frame = frame.copy()
    kept_values = frame["value"].where(frame["status"] == Status.KEEP)
    best = kept_values.groupby(frame["segment"]).transform(
        lambda s: (s.cummin() if direction == "lower" else s.cummax()).ffill().shift(1)
    )
    frame["change_pct"] = 100.0 * (frame["value"] - best) / best
    return frame


def _unescape(text: str) -> str:
    """Some logs hold literal `\\u2192` escapes in their prose: show the character."""
    return _ESCAPE.sub(lambda m: chr(int(m.group(1), 16)), text) if text else text
