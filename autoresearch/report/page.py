"""The review as one self-contained HTML page: the headline, the plots, every experiment with
its evidence, and the groups `finalize` would cut.

Nothing is fetched when it is opened: the styles, the script and the plots (PNG, base64) are
inside the file, so it can be mailed, attached to a pull request or opened on a machine with no
network. The table of experiments filters by status, family and proposer in the browser; each
row opens onto its evidence (the samples of both arms, the interval, the rule, the ASI and the
patch, the checks, a failed run's last output), linked by its own address (`#exp-12`), from the
keyboard too; the columns sort. `autoresearch serve` renders it afresh for each request, and
while a night runs the page fetches itself and updates in place, keeping the reader's filters,
open rows and scroll, with the experiment in flight and its phase.
"""

from __future__ import annotations

import base64
import math
import tempfile
from pathlib import Path
from typing import Any

from markupsafe import Markup

from ..errors import UserError
from ..journal.checks_run import ChecksRun
from ..journal.decision import HoldoutEvidence
from ..journal.evidence import Evidence
from ..journal.records import FAILED_STATUSES, ExperimentRecord
from ..journal.tail import last_experiments
from ..profiles import load_profile
from ..repo.state_dir import session_paths
from .flame import icicle_svg
from .frame import frame_rows
from .history import History
from .merge import merge_facts
from .render import render_template

__all__ = ["MAX_DETAILED", "page_data", "render_page", "waiting_page"]

# Experiments whose evidence (samples, patch) the page carries: the latest ones. A season's
# journal has 100,000, and a page holding each one's samples and patch would not open.
MAX_DETAILED = 2000
MAX_PATCH_BYTES = 64 * 1024  # of each patch shown; the rest is said to be cut
# The ASI fields the row's own lines show (the result is the rule's reason).
SHOWN_ASI = ("hypothesis", "mechanism", "next_action_hint", "result")
ROW_COLUMNS = (
    "n",
    "id",
    "status",
    "title",
    "change_pct",
    "ci_low_pct",
    "ci_high_pct",
    "rule",
    "reason",
    "family",
    "proposer",
    "hypothesis",
    "mechanism",
    "next_action_hint",
    "commit",
)


def render_page(
    history: History,
    summary: dict,
    config=None,
    live_s: int | None = None,
    templates: Path | None = None,
    inflight: dict | None = None,
) -> str:
    """The page for one session; `live_s` (a night is running) makes it fetch itself that
    often and update in place, keeping the reader's filters, open rows and scroll; `inflight`
    is the experiment running now (morning/status.py)."""
    return render_template(
        "report.html.j2",
        templates,
        s=summary,
        page={**page_data(history, summary, config), "inflight": inflight},
        live_s=live_s,
        waiting=None,
    )


def waiting_page(journal: Path, live_s: int) -> str:
    """What `serve` shows before the night wrote its journal: the page it becomes once it did."""
    return render_template(
        "report.html.j2", None, s=None, page=None, live_s=live_s, waiting=journal
    )


def page_data(history: History, summary: dict, config=None) -> dict[str, Any]:
    """What the page shows besides the summary: plots, rows with their evidence, groups."""
    rows = [_row(r) for r in frame_rows(history.experiments, *ROW_COLUMNS)]
    detailed = _records(history, config)
    moved = {w["n"]: w for w in summary.get("wins") or []}
    for row in rows:
        record = detailed.get(row["id"])
        row["evidence"] = _evidence(record, config) if record is not None else None
        win = moved.get(row["n"]) or {}
        row["profile_said"] = win.get("profile_said") or ""
        row["flame"] = _flame(config, win.get("parent"), win.get("commit")) if win else ""
    return {
        "plots": _plots(history),
        "rows": rows,
        "detailed": len(detailed),
        "statuses": sorted({r["status"] for r in rows}),
        "families": sorted({r["family"] for r in rows if r["family"]}),
        "proposers": sorted({r["proposer"] for r in rows if r["proposer"]}),
        "flame": _flame(config, None, history.environment.get("tip_commit")),
        **merge_facts(history, summary, config),
    }


def _row(row) -> dict[str, Any]:
    out = row._asdict()
    for key, value in out.items():
        if isinstance(value, float) and math.isnan(value):
            out[key] = None
    out["n"] = int(out["n"])
    return out


def _records(history: History, config) -> dict[str, ExperimentRecord]:
    """The latest MAX_DETAILED experiments' records, by id (pi logs have none)."""
    if history.format != "autoresearch":
        return {}
    journal = Path(history.source) if config is None else config.journal_path
    records = last_experiments(journal, history.name, MAX_DETAILED)
    return {r.id: r for r in records}


def _evidence(record: ExperimentRecord, config) -> dict[str, Any]:
    decision = record.decision
    metrics: dict[str, Evidence | HoldoutEvidence] = {}
    if decision is not None:
        metrics |= decision.metrics
        metrics |= decision.sentinels
        if decision.holdout is not None:  # its runs before the keep, as one more metric
            metrics[f"{decision.holdout.metric} (hidden holdout)"] = decision.holdout
    measured = [
        {
            "name": name,
            "baseline": m.baseline_samples,
            "candidate": m.candidate_samples,
            "baseline_median": m.baseline_median,
            "candidate_median": m.candidate_median,
            "change_pct": m.change_pct,
            "ci_low_pct": m.ci_low_pct,
            "ci_high_pct": m.ci_high_pct,
        }
        for name, m in metrics.items()
    ]
    return {
        "metrics": measured,
        "rule": record.rule,
        "reason": record.reason,
        "look": None if decision is None else decision.look,
        # What the row above does not say already.
        "asi": {k: v for k, v in vars(record.asi).items() if v and k not in SHOWN_ASI},
        "touched_files": record.touched_files,
        "patch": _patch_text(record, config),
        "confinement": record.confinement.tool if record.confinement is not None else None,
        "checks": _checks(record.checks),
        # What a run that failed printed last: the reason is a path otherwise.
        "output": record.bench_tail if record.status in FAILED_STATUSES else None,
        "error": record.error,
    }


def _flame(config, before: str | None, after: str | None) -> Markup:
    """The icicle of `after`'s stored profile, against `before`'s when given (flame.py);
    empty without one."""
    if config is None or not after or not config.profile.command:
        return Markup("")
    paths = session_paths(config)
    now = load_profile(paths.profile(after))
    was = load_profile(paths.profile(before)) if before else None
    if not now or (before and not was):
        return Markup("")
    return Markup(icicle_svg(now, was))  # built from escaped text only


def _checks(checks: ChecksRun | None) -> str | None:
    """The checks' verdict in words: passed or how they failed, how long, how many tests."""
    if checks is None:
        return None
    code = checks.exit_code
    said = "passed" if code == 0 else f"failed (exit code {code})"
    if checks.timed_out:
        said = "timed out"
    said += f" in {checks.duration_s:.1f} s"
    if checks.tests is not None:
        said += f"; {checks.tests.passed} tests passed, {checks.tests.skipped} skipped"
    return said


def _patch_text(record: ExperimentRecord, config) -> str | None:
    """The patch as the loop saved it (the session's patches directory), cut when long."""
    if config is None:
        return None
    try:
        path = session_paths(config).patches / f"{record.n:04d}-{record.patch_sha256[:12]}.patch"
        with open(path, "rb") as handle:
            data = handle.read(MAX_PATCH_BYTES + 1)
    except (OSError, UserError):
        return None
    text = data[:MAX_PATCH_BYTES].decode("utf-8", errors="replace")
    return text + ("\n... (cut at 64 KB)" if len(data) > MAX_PATCH_BYTES else "")


def _plots(history: History) -> list[dict[str, str]]:
    """progress, scales and (when knobs were swept) sweeps, as PNG data URIs."""
    from .plots import plot_progress, plot_scales, plot_sweeps

    found = []
    drawn = [("progress", plot_progress), ("scales", plot_scales), ("sweeps", plot_sweeps)]
    with tempfile.TemporaryDirectory() as tmp:
        for name, draw in drawn:
            path = draw(history, Path(tmp) / f"{name}.png")
            if path is not None:
                data = base64.b64encode(path.read_bytes()).decode("ascii")
                found.append({"name": name, "src": f"data:image/png;base64,{data}"})
    return found
