"""Figures of a session, rendered with matplotlib's Agg backend (no display needed).

progress.png  the primary metric per experiment: kept, discarded and failed marked apart, the
              running best as a step line, kept wins annotated with their titles
scales.png    each scale of the primary metric's family against its baseline, over the keeps
sweeps.png    for each swept knob, the primary metric against the knob's value
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.ticker import MaxNLocator

from ..journal.records import FAILED_STATUSES
from ..statuses import Status
from .history import History, frame_rows

__all__ = [
    "FIGSIZE",
    "plot_progress",
    "plot_scales",
    "plot_sweeps",
    "progress_data",
    "scales_data",
]

FIGSIZE = (12, 6)
DPI = 100
MAX_ANNOTATIONS = 12  # beyond this the titles overlap; the biggest wins are annotated
STYLE = {
    "keep": {"color": "#2ca02c", "marker": "o", "label": "kept"},
    "discard": {"color": "#d62728", "marker": "x", "label": "discarded"},
    "inconclusive": {"color": "#ff7f0e", "marker": "d", "label": "inconclusive"},
    "failed": {
        "color": "#7f7f7f",
        "marker": "v",
        "label": "failed (at the top when it has no value)",
    },
}


def progress_data(history: History) -> pd.DataFrame:
    """The data behind progress.png: n, value, kind, and the running best."""
    df = history.experiments[["n", "status", "title", "value", "change_pct"]].copy()
    df["kind"] = df["status"].where(~df["status"].isin(FAILED_STATUSES), "failed")
    df.loc[~df["kind"].isin(STYLE), "kind"] = "failed"
    kept = df["value"].where(df["status"] == Status.KEEP)
    running = kept.cummin() if history.lower_is_better else kept.cummax()
    df["best"] = running.ffill().fillna(history.baseline["value"])
    return df


def plot_progress(history: History, path: Path) -> Path:
    df = progress_data(history)
    fig, ax = plt.subplots(figsize=FIGSIZE, dpi=DPI)
    base = history.baseline["value"]
    steps = pd.concat([pd.Series([0]), df["n"]]), pd.concat([pd.Series([base]), df["best"]])
    ax.step(*steps, where="post", color="#1f77b4", linewidth=2, label="best so far")
    if base is not None:
        ax.axhline(base, color="#1f77b4", linestyle=":", linewidth=1, label="baseline")
    failed_y = df["value"].max() if df["value"].notna().any() else base or 0
    for kind, style in STYLE.items():
        part = df[df["kind"] == kind]
        if part.empty:
            continue
        y = part["value"].fillna(failed_y) if kind == "failed" else part["value"]
        ax.scatter(part["n"], y, s=40, zorder=3, **style)
    wins = df[df["status"] == Status.KEEP].copy()
    wins["size"] = wins["change_pct"].abs().fillna(0)
    for row in wins.nlargest(MAX_ANNOTATIONS, "size").itertuples():
        ax.annotate(
            _short(row.title),
            (row.n, row.value),
            xytext=(6, 8),
            textcoords="offset points",
            fontsize=8,
            rotation=20,
        )
    unit = f" ({history.unit})" if history.unit else ""
    ax.set_xlabel("experiment")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylabel(f"{history.metric}{unit}")
    better = "lower" if history.lower_is_better else "higher"
    ax.set_title(f"{history.name}: {history.metric}, {better} is better")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="best", fontsize=9)
    return _save(fig, path)


def scales_data(history: History) -> pd.DataFrame:
    """The data behind scales.png: for each kept experiment, each scale's value / baseline."""
    from .summary import family_summary  # the family logic lives with the summary

    family = family_summary(history)
    if not family or not family["rows"]:
        return pd.DataFrame(columns=["n", "scale", "ratio"])
    df = history.experiments
    kept = df[df["status"] == Status.KEEP]
    rows = []
    for scale in family["rows"]:
        base = scale["baseline"]
        rows.append({"n": 0, "scale": scale["scale"], "ratio": 1.0})
        for row in frame_rows(kept, "n", "metrics"):
            value = (row.metrics or {}).get(scale["metric"])
            if value is not None and base:
                rows.append({"n": int(row.n), "scale": scale["scale"], "ratio": value / base})
    return pd.DataFrame(rows)


def plot_scales(history: History, path: Path) -> Path:
    data = scales_data(history)
    fig, ax = plt.subplots(figsize=FIGSIZE, dpi=DPI)
    for scale, part in data.groupby("scale", sort=False):
        ax.step(part["n"], part["ratio"], where="post", marker="o", label=scale)
    ax.axhline(1.0, color="black", linestyle=":", linewidth=1)
    ax.set_xlabel("experiment (kept ones)")
    ax.set_ylabel("value / baseline at the same scale")
    ax.set_title(f"{history.name}: each scale against its baseline")
    ax.grid(True, alpha=0.3)
    if not data.empty:
        ax.legend(title="scale", fontsize=9)
    else:
        ax.text(0.5, 0.5, "no scaled metrics in this journal", ha="center", transform=ax.transAxes)
    return _save(fig, path)


def _short(title: str, width: int = 40) -> str:
    return title if len(title) <= width else title[: width - 1] + "…"


def _save(fig, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def plot_sweeps(history: History, path: Path) -> Path | None:
    """The primary metric against each swept knob's value; None when nothing was swept."""
    df = history.experiments
    rows = [
        (r.proposal["knob"], r.proposal["value"], r.value, r.status)
        for r in frame_rows(df, "proposal", "value", "status")
        if isinstance(r.proposal, dict) and "knob" in r.proposal
    ]
    if not rows:
        return None
    knobs = list(dict.fromkeys(knob for knob, *_ in rows))
    fig, axes = plt.subplots(1, len(knobs), figsize=FIGSIZE, dpi=DPI, squeeze=False)
    for ax, knob in zip(axes[0], knobs, strict=True):
        for kind, style in STYLE.items():
            points = [
                (value, metric)
                for name, value, metric, status in rows
                if name == knob and _kind(status) == kind and metric == metric  # NaN != NaN
            ]
            if points:
                xs, ys = zip(*points, strict=True)
                ax.scatter(xs, ys, color=style["color"], marker=style["marker"], label=kind)
        ax.set_xlabel(knob)
        ax.set_ylabel(f"{history.metric} ({history.unit})" if history.unit else history.metric)
        ax.grid(True, alpha=0.3)
        ax.legend(loc="best", fontsize="small")
    fig.suptitle(f"{history.name}: {history.metric} against each swept knob's value")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path


def _kind(status: str) -> str:
    return status if status in STYLE and status != "failed" else "failed"
