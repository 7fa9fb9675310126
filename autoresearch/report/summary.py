"""What a morning review says, computed from the history frame with pandas: one plain dict that
the terminal report, the Markdown, the JSON and the PR description all render."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from ..config import Config
from ..decide.design import DESIGN_BETA, TARGET_BETA
from ..decide.percent import CONTRIBUTION, change_pct, interval_side
from ..journal.digest import (
    counts_said,
    hosts_lost_said,
    in_status_order,
    lost_with_calibration,
)
from ..journal.records import FAILED_STATUSES
from ..readers.rows import is_minimum
from ..repo.globs import matches_any
from ..statuses import Status
from .frame import frame_rows
from .history import History
from .outcomes import (
    clean,
    first_sentence,
    not_kept,
    wins,
)
from .scales import scale_parts, scale_value
from .sweeps import joint_summaries, sweep_summaries

__all__ = ["MAJOR_WIN_PCT", "family_summary", "summarize"]

MAJOR_WIN_PCT = 5.0  # a kept change at least this large is a major win in the PR
MANIFEST_GLOBS = (
    "**/go.mod",
    "**/go.sum",
    "**/Cargo.toml",
    "**/Cargo.lock",
    "**/package.json",
    "**/package-lock.json",
    "**/pyproject.toml",
    "**/requirements*.txt",
)


def summarize(
    history: History,
    comparison: str | None = None,
    label: str | None = None,
    listed: int | None = None,
) -> dict:
    """The review of one session. `comparison` names the engine the headline compares against
    (the primary metric's first word replaced by it, e.g. `sqlite`), `label` how to call it;
    `listed`: how many of each not-kept group's experiments it names (its latest; None: all)."""
    every = history.experiments
    # A hypothesis measured again counts once, by its last outcome; its runs all count.
    superseded = every["superseded"].astype(bool)
    df = every[~superseded] if superseded.any() else every  # no copy of a night never retried
    kept = df[df["status"] == Status.KEEP]
    failed = df[df["status"].isin(FAILED_STATUSES)]
    base, final = history.baseline["value"], history.final["value"]
    by_status = in_status_order(df["status"].value_counts().to_dict())
    summary: dict[str, Any] = {
        "source": history.source,
        "format": history.format,
        "name": history.name,
        "metric": history.metric,
        "unit": history.unit,
        "direction": history.direction,
        "experiments": len(every),
        "retried": int(superseded.sum()),
        "by_status": by_status,
        "counts_said": counts_said(by_status, int(superseded.sum())),
        "kept": len(kept),
        "failed": len(failed),
        "baseline": {k: clean(v) for k, v in history.baseline.items() if k != "metrics"},
        "final": {k: clean(v) for k, v in history.final.items() if k != "metrics"},
        "cumulative_change_pct": _change(history, history.metric, base, final),
        "confirmation": history.confirmation
        and {k: v for k, v in history.confirmation.items() if k != "metrics"},
        "metrics": _metric_rows(history, history.config.get("units", {})),
        "wins": wins(kept[kept["n"] != history.baseline.get("n")]),
        "not_kept": not_kept(df, history.lower_is_better, listed),
        "runs": _runs(every, history),
        "family": family_summary(history, comparison, label),
        "allocations": _allocations(history),
        "safety": _safety(history, kept),
        "methodology": _methodology(history, every),
        "warnings": history.warnings,
        "proposers": _proposers(every),
        "hosts_lost": _hosts_lost(every, history.calibrations),
        "refused": _refused(df),
        "sweeps": sweep_summaries(every),
        "joint": joint_summaries(every),
        "imported": [summarize(h, listed=listed) for h in history.imported],
        "contributions": _contributions(history),
    }
    # The title's change is the one its two numbers show: both come from one measurement
    # (the confirmation of the tip when there is one; see headline.py).
    summary["headline_change_pct"] = summary["cumulative_change_pct"]
    summary["headline_note"] = history.final.get("note")
    major = [w for w in summary["wins"] if abs(w["change_pct"] or 0) > MAJOR_WIN_PCT]
    summary["major_wins"] = major
    summary["minor_wins"] = [w for w in summary["wins"] if w not in major]
    return summary


def _change(history: History, name: str, baseline, final) -> float | None:
    """A metric's change from the baseline to the final best: as the confirmation estimated
    it when one measured it (one estimator behind every figure), else the medians' ratio."""
    measured = (history.final.get("changes") or {}).get(name)
    return clean(measured) if measured is not None else change_pct(baseline, final)


def _speedup(history: History, name: str, baseline, final) -> float | None:
    """How many times faster: from the same change the row shows."""
    change = _change(history, name, baseline, final)
    return 100 / (100 + change) if change is not None and change > -100 else None


def _metric_rows(history: History, units: dict) -> list[dict]:
    """Baseline against final for the primary metric first, then every other measured one."""
    names = [history.metric]
    names += [m["name"] for m in history.config.get("secondary", [])]
    names += [m["name"] for m in history.config.get("sentinel", [])]
    if history.format != "autoresearch":
        names += sorted(set(history.baseline["metrics"]) & set(history.final["metrics"]))
    rows = []
    for name in dict.fromkeys(names):
        b, f = history.baseline["metrics"].get(name), history.final["metrics"].get(name)
        if name == history.metric:
            b, f = history.baseline["value"], history.final["value"]
        rows.append(
            {
                "name": name,
                "unit": units.get(name, history.unit if name == history.metric else ""),
                "baseline": clean(b),
                "final": clean(f),
                "change_pct": _change(history, name, b, f),
            }
        )
    return rows


def _contributions(history: History) -> list[dict]:
    """What each keep adds to the final tip, as `finalize --contributions` last measured it
    (the tip without it against the tip), in keep order; empty when never measured."""
    tip = history.final.get("commit")
    latest: dict[str, dict] = {}
    for confirmation in history.confirmations:
        if confirmation.get("left_out") and confirmation.get("tip_commit") == tip:
            latest[confirmation["left_out"][0]] = confirmation
    rows = []
    kept = history.experiments[history.experiments["status"] == Status.KEEP]
    for n, title, commit in frame_rows(kept, "n", "title", "commit"):
        c = latest.get(commit)
        if c is not None:
            side = interval_side(c["ci_low_pct"], c["ci_high_pct"], history.direction)
            rows.append(
                {
                    "n": int(n),
                    "title": title,
                    "change_pct": c["change_pct"],
                    "ci_low_pct": c["ci_low_pct"],
                    "ci_high_pct": c["ci_high_pct"],
                    "runs": c["runs_per_arm"],
                    "verdict": CONTRIBUTION.get(side or "", "not measured"),
                }
            )
    return rows


def _hosts_lost(df: pd.DataFrame, calibrations: list[dict]) -> str | None:
    """The bench hosts that died while they measured experiments or calibrations, said as
    `status` says it; None when none did."""
    lost: dict[str, list[int]] = {}
    for row in frame_rows(df, "n", "hosts_lost"):
        for host in row.hosts_lost or ():
            lost.setdefault(host, []).append(int(row.n))
    for calibration in calibrations:  # number 0: said as a calibration
        for host in lost_with_calibration(calibration):
            lost.setdefault(host, []).append(0)
    return hosts_lost_said(lost) if lost else None


def _proposers(df: pd.DataFrame) -> list[dict]:
    """Where the hypotheses came from, and what the coding agents among them cost."""
    rows = []
    proposers = df["proposer"].where(df["proposer"].notna(), "queue")
    for name, group in df.groupby(proposers, sort=False):
        agent = group[group["agent"].eq(True)]
        costs = agent["agent_cost_usd"]
        row = {
            "name": name,
            "experiments": len(group),
            "kept": int((group["status"] == Status.KEEP).sum()),
            "refused": int((group["status"] == Status.REFUSED).sum()),
            "failed": int((group["status"] == Status.AGENT_FAILED).sum()),
            "agent": bool(len(agent)),
            "cost_usd": clean(costs.sum()) if costs.notna().any() else None,
            "unknown_cost": int(costs.isna().sum()) if len(agent) else 0,
        }
        rows.append(row | {"line": _proposer_line(row)})
    # One source and no agent says nothing a reader needs (a queue night, a pi journal).
    return rows if len(rows) > 1 or any(r["agent"] for r in rows) else []


def _proposer_line(row: dict) -> str:
    parts = [f"{row['kept']} kept"]
    if row["refused"]:
        parts.append(f"{row['refused']} refused before a run")
    if row["failed"]:
        parts.append(f"{row['failed']} agent failures")
    if row["agent"]:
        cost = f"${row['cost_usd']:.2f}" if row["cost_usd"] is not None else "$0.00 reported"
        if row["unknown_cost"]:
            cost += f" + {row['unknown_cost']} proposals of unknown cost"
        parts.append(f"cost {cost}")
    return f"{row['name']} {row['experiments']} ({', '.join(parts)})"


def _refused(df: pd.DataFrame) -> list[dict]:
    """Proposals refused before any bench run, and why: what the agent was told next time."""
    refused = df[df["status"].isin(("refused", "agent_failed"))]
    return [
        {
            "n": int(row.n),
            "title": row.title,
            "status": row.status,
            "kind": row.refusal,
            "why": first_sentence(row.reason or ""),
        }
        for row in refused.itertuples()
    ]


def _runs(df: pd.DataFrame, history: History) -> dict:
    """Bench runs the session made: the experiments', and the calibrations' and confirmations'
    beside them, which a night pays for too."""
    experiments = int(df["bench_runs"].fillna(0).sum())
    calibrations = sum(len(c.get("bench_logs") or []) for c in history.calibrations)
    confirmed = history.confirmations
    if history.branch is not None:  # a branch's own: its experiments and its confirmations
        calibrations = 0
        confirmed = [c for c in confirmed if c.get("branch") == history.branch]
    confirmations = sum(2 * (c.get("runs_per_arm") or 0) for c in confirmed)
    return {
        "bench_runs": experiments + calibrations + confirmations,
        "experiment_runs": experiments,
        "calibration_runs": calibrations,
        "confirmation_runs": confirmations,
        "per_decision": clean(df["bench_runs"].mean()) if len(df) else None,
        "bench_s": clean(df["bench_s"].sum(min_count=1)),
        "checks_s": clean(df["checks_s"].sum(min_count=1)),
        "duration_s": clean(df["duration_s"].sum(min_count=1)),
    }


def family_summary(
    history: History, comparison: str | None = None, label: str | None = None
) -> dict | None:
    """The primary metric at every scale measured, baseline against final, and the comparison
    engine's figure at the same scale in the final state."""
    split = scale_parts(history.metric)
    if split is None:
        return None
    before, _, after = split
    names = set(history.baseline["metrics"]) | set(history.final["metrics"])
    members = [scale_parts(n) for n in names]
    scales = sorted(
        {m[1] for m in members if m and m[0] == before and m[2] == after}, key=scale_value
    )
    # The comparison engine's metric: the first word of the name replaced by the engine's.
    rest = before.split("_", 1)[1] if "_" in before else ""
    rows = []
    for scale in scales:
        name = f"{before}{scale}{after}"
        b, f = history.baseline["metrics"].get(name), history.final["metrics"].get(name)
        other = None
        if comparison and rest:
            other = history.final["metrics"].get(f"{comparison}_{rest}{scale}{after}")
        rows.append(
            {
                "scale": scale,
                "metric": name,
                "baseline": clean(b),
                "final": clean(f),
                "change_pct": _change(history, name, b, f),
                "speedup": _speedup(history, name, b, f),
                "comparison": clean(other),
                "vs_comparison": (other / f) if other and f else None,
            }
        )
    return {
        "rows": rows,
        "comparison": comparison,
        "label": label or (comparison.capitalize() if comparison else None),
    }


def _allocations(history: History) -> list[dict]:
    names = sorted(
        n
        for n in set(history.baseline["metrics"]) & set(history.final["metrics"])
        if n.endswith(("_allocs_op", "_bytes_op"))
    )
    return [
        {
            "name": n,
            "baseline": clean(history.baseline["metrics"][n]),
            "final": clean(history.final["metrics"][n]),
            "change_pct": _change(
                history, n, history.baseline["metrics"][n], history.final["metrics"][n]
            ),
        }
        for n in names
    ]


def _safety(history: History, kept: pd.DataFrame) -> dict:
    if history.format != "autoresearch":
        checks_failed = int((history.experiments["status"] == Status.CHECKS_FAILED).sum())
        return {
            "checks_on_every_keep": None,
            "note": f"a kept run passed the checks; {checks_failed} run(s) failed them and were "
            "not kept. This log does not record sentinels or touched paths.",
        }
    config = Config.from_dict(history.config)
    touched = [p for files in kept["touched_files"] for p in files]
    protected = config.protected_globs()
    return {
        "checks_on_every_keep": bool((kept["checks_exit"] == 0).all()),
        "checks_when": config.checks.when,
        "sentinels": [{"name": s.name, "budget_pct": s.budget_pct} for s in config.sentinel],
        "sentinels_held": bool(kept["sentinels_ok"].all()),
        "protected_touched": sorted({p for p in touched if matches_any(p, protected)}),
        "manifests_touched": sorted({p for p in touched if matches_any(p, MANIFEST_GLOBS)}),
        "files_changed": sorted(set(touched)),
    }


def _statistic(history: History) -> str | None:
    """What the metric decided on is, when it is not a plain median: a fastest round, or the
    fallback a calibration found the configured primary too noisy for."""
    said = []
    if is_minimum(history.metric):
        said.append(
            f"{history.metric} is each run's fastest round as its harness reported it, not its "
            "median: steadier where the machine's speed comes and goes, blind to what only "
            "the slower rounds show"
        )
    if history.fallback_from:
        said.append(
            f"the night decided on {'it' if said else history.metric} ([metric] fallback) "
            f"because {history.fallback_from} was too noisy for the effect asked for in a "
            "calibration; each record keeps both"
        )
    return "; ".join(said) or None


def _methodology(history: History, df: pd.DataFrame) -> dict:
    info: dict[str, Any] = {"experiments": len(df)}
    if history.format != "autoresearch":
        info["rule"] = (
            "one bench run per experiment; pi-autoresearch's confidence score (how many median "
            "absolute deviations the change is) was recorded, and a person kept or discarded"
        )
        return info
    d = Config.from_dict(history.config).decision
    noise = [c["noise_pct"].get(history.metric) for c in history.calibrations]
    thresholds = [c["threshold_pct"] for c in history.calibrations]
    info |= {
        "rule": (
            "each candidate was run against the current best in interleaved pairs and judged "
            + (
                "on the within-pair log ratios (a paired t-test and its 95% interval)"
                if d.paired
                else "by a one-sided Mann-Whitney U test and the Hodges-Lehmann change"
            )
            + f" at looks after {', '.join(map(str, d.schedule()))} runs per arm"
            + (" where budget_s allowed" if d.budget_s else "")
            + " (a "
            f"group-sequential design: alpha {d.alpha:g} spent exactly over the looks, "
            f"futility stops giving up {_futility_designs(df, d.target_effect_pct)}); "
            "kept only when significant and at least the floor "
            + (
                f"max({d.min_effect_pct:g}%, {d.noise_multiplier:g} x noise)"
                if d.noise_multiplier
                else f"{d.min_effect_pct:g}%"
            )
        ),
        "calibrations": len(history.calibrations),
        "statistic": _statistic(history),
        "toolchains": _toolchains(history.calibrations),
        "noise_pct": [n for n in noise if n is not None],
        # What each calibration said the night could detect with 90% power (decide/design.py).
        "detectable_pct": [
            c["detectable_effect_pct"]
            for c in history.calibrations
            if c.get("detectable_effect_pct") is not None
        ],
        "threshold_pct": thresholds,
        "confirm_runs": d.confirm_runs,
    }
    return info


def _futility_designs(df: pd.DataFrame, target_pct: float) -> str:
    """What the night's futility stops were built to let through, from its decisions: the win
    and the share of such wins given up, with how many decisions had each design. A journal
    whose decisions did not record it is described by the designs this code builds."""
    if "designed_power" not in df:
        designs = pd.DataFrame()
    else:
        designs = df[df["designed_power"].notna() & df["designed_for_pct"].notna()]
    if designs.empty:
        return (
            f"at most {TARGET_BETA:.0%} of {target_pct:g}% wins, or {DESIGN_BETA:.0%} of the "
            "smallest win a noisy bench can see"
        )
    counts = (
        designs.assign(
            effect=designs["designed_for_pct"].round(1),
            given_up=(1 - designs["designed_power"]).round(3),
        )
        .groupby(["effect", "given_up"], sort=False)
        .size()
    )
    parts = []
    for (effect, given_up), count in counts.items():
        what = "" if math.isclose(effect, target_pct) else ", the smallest the noise let them see"
        decisions = f"{count} decision{'s' if count != 1 else ''}"
        parts.append(f"at most {given_up:.0%} of {effect:g}% wins{what} ({decisions})")
    return "; ".join(parts)


def _toolchains(calibrations: list[dict]) -> list[str]:
    """What measured, as the last calibration found it on the bench's PATH; a version that
    changed during the session says from what."""
    first = (calibrations[0].get("toolchains") or {}) if calibrations else {}
    last = (calibrations[-1].get("toolchains") or {}) if calibrations else {}
    out = []
    for name, version in last.items():
        text = version if version.lower().startswith(name) else f"{name} {version}"
        was = first.get(name)
        out.append(text if was in (None, version) else f"{text} (was {was} at the start)")
    return out
