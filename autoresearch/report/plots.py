"""Figures of a session, rendered with matplotlib's Agg backend (no display needed).

progress.png  each experiment as the change the rule judged against the best of its time, with
              its interval; failed ones in a band of their own; the best against the baseline
              step by step, and the confirmation's figure
scales.png    each scale of the primary metric's family against its baseline, over the keeps
              (not drawn when the metric has no scales)
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
from .frame import frame_rows
from .history import History

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
        "label": "failed",
    },
}


def progress_data(history: History) -> pd.DataFrame:
    """The data behind progress.png, one row per experiment: its kind; its paired change
    against the best it was judged against, with the interval the rule read (`change_pct`,
    `ci_low_pct`, `ci_high_pct`; for a pi-autoresearch log, the change of its value against the
    best kept before it); `better_unshown` for one not kept although it measured better (its
    interval reaches the worse side); the best's change against the baseline after it
    (`best_pct`, the kept changes compounded); and the running best's value (`best`)."""
    columns = ["n", "status", "title", "value", "change_pct", "ci_low_pct", "ci_high_pct"]
    df = history.experiments[columns].copy()
    df["kind"] = df["status"].where(~df["status"].isin(FAILED_STATUSES), "failed")
    df.loc[~df["kind"].isin(STYLE), "kind"] = "failed"
    better = df["change_pct"] < 0 if history.lower_is_better else df["change_pct"] > 0
    df["better_unshown"] = better.fillna(False) & df["kind"].isin(["discard", "inconclusive"])
    kept = df["status"] == Status.KEEP
    factors = (1 + df["change_pct"].where(kept, 0.0).fillna(0.0) / 100).cumprod()
    df["best_pct"] = 100 * (factors - 1)
    values = df["value"].where(kept)
    running = values.cummin() if history.lower_is_better else values.cummax()
    df["best"] = running.ffill().fillna(history.baseline["value"])
    return df


def plot_progress(history: History, path: Path) -> Path:
    """Three bands over the experiments: the failed ones (no measurement); each measured one
    as the change the rule judged, against the best of its time, with its 95% interval; the
    best against the baseline, step by step, and the confirmation's figure at the end. A
    discard is drawn better than its best only when it measured better, and hollow then."""
    df = progress_data(history)
    fig, (band, ax, best) = plt.subplots(
        3, 1, figsize=FIGSIZE, dpi=DPI, sharex=True,
        gridspec_kw={"height_ratios": [0.45, 4, 2.2]},
    )  # fmt: skip
    better = "lower" if history.lower_is_better else "higher"
    fig.suptitle(f"{history.name}: {history.metric}, {better} is better")
    _failed_band(band, df)
    _judged(ax, df, better)
    _best_line(best, df, history)
    best.set_xlabel("experiment")
    best.xaxis.set_major_locator(MaxNLocator(integer=True))
    if df.empty:
        ax.text(0.5, 0.5, "no experiments yet", ha="center", transform=ax.transAxes)
    return _save(fig, path)


def _failed_band(ax, df: pd.DataFrame) -> None:
    failed = df[df["kind"] == "failed"]
    style = STYLE["failed"]
    ax.scatter(failed["n"], [0] * len(failed), color=style["color"], marker=style["marker"])
    ax.set_yticks([])
    ax.set_ylabel("failed", rotation=0, ha="right", va="center", fontsize=9)
    ax.set_title(f"{len(failed)} failed (no measurement)", fontsize=9, loc="left")


def _judged(ax, df: pd.DataFrame, better: str) -> None:
    ax.axhline(0, color="#1f77b4", linewidth=1.5, label="the best it was judged against")
    for kind in ("keep", "discard", "inconclusive"):
        style = STYLE[kind]
        for unshown in (False, True):
            part = df[(df["kind"] == kind) & (df["better_unshown"] == unshown)]
            part = part[part["change_pct"].notna()]
            if part.empty:
                continue
            low = (part["change_pct"] - part["ci_low_pct"]).fillna(0).clip(lower=0)
            high = (part["ci_high_pct"] - part["change_pct"]).fillna(0).clip(lower=0)
            label = style["label"] + (", measured better but not shown" if unshown else "")
            ax.errorbar(
                part["n"], part["change_pct"], yerr=[low, high],
                fmt="o" if unshown else style["marker"],
                color=style["color"], mfc="none" if unshown else style["color"], ms=6,
                elinewidth=1, capsize=2, label=label, zorder=3,
            )  # fmt: skip
    wins = df[df["status"] == Status.KEEP].copy()
    wins["size"] = wins["change_pct"].abs().fillna(0)
    for row in wins.nlargest(MAX_ANNOTATIONS, "size").itertuples():
        ax.annotate(
            _short(row.title), (row.n, row.change_pct), xytext=(6, 8),
            textcoords="offset points", fontsize=8, rotation=20,
        )  # fmt: skip
    ax.set_ylabel(f"against its best (%), {better}\nis better", fontsize=9)
    ax.grid(True, alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="best", fontsize=8)


def _best_line(ax, df: pd.DataFrame, history: History) -> None:
    steps = pd.concat([pd.Series([0]), df["n"]]), pd.concat([pd.Series([0.0]), df["best_pct"]])
    ax.step(*steps, where="post", color="#1f77b4", linewidth=2, label="the best: kept changes")
    ax.axhline(0, color="#1f77b4", linestyle=":", linewidth=1, label="baseline")
    confirmed = history.confirmation or {}
    if confirmed.get("change_pct") is not None and not df.empty:
        at = float(df["n"].max()) + 0.5
        change = confirmed["change_pct"]
        low, high = confirmed.get("ci_low_pct"), confirmed.get("ci_high_pct")
        yerr = [[change - low], [high - change]] if low is not None and high is not None else None
        ax.errorbar(
            [at], [change], yerr=yerr, fmt="s", color="black", capsize=3,
            label=f"confirmed, base against tip: {change:+.1f}%",
        )  # fmt: skip
    ax.set_ylabel("against the baseline (%)", fontsize=9)
    ax.grid(True, alpha=0.3)
    ax.legend(loc="best", fontsize=8)


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


def plot_scales(history: History, path: Path) -> Path | None:
    """Each scale against its baseline over the keeps; None (no file) without scales."""
    data = scales_data(history)
    if data.empty:
        path.unlink(missing_ok=True)  # an earlier night's would pass for this one's
        return None
    fig, ax = plt.subplots(figsize=FIGSIZE, dpi=DPI)
    for scale, part in data.groupby("scale", sort=False):
        ax.step(part["n"], part["ratio"], where="post", marker="o", label=scale)
    ax.axhline(1.0, color="black", linestyle=":", linewidth=1)
    ax.set_xlabel("experiment (kept ones)")
    ax.set_ylabel("value / baseline at the same scale")
    ax.set_title(f"{history.name}: each scale against its baseline")
    ax.grid(True, alpha=0.3)
    ax.legend(title="scale", fontsize=9)
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
