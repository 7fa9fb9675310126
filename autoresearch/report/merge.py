"""What the page shows for a merge decision beside the experiments: how the night decided
(settings and power), where and when it ran, the branches `finalize` cuts (each with its own
confirmation and the commands that check it out or describe it), and the whole change from
the base to the tip."""

from __future__ import annotations

from typing import Any

from ..errors import UserError
from .history import History

__all__ = ["MAX_DIFF_BYTES", "merge_facts"]

MAX_DIFF_BYTES = 256 * 1024  # of the whole diff shown; the rest is said to be cut


def merge_facts(history: History, summary: dict, config) -> dict[str, Any]:
    """The settings, the machine, the branches and the diff, for the page."""
    return {
        "settings": _settings(history, summary),
        "where": _where(history, summary),
        "groups": _groups(history, config) if summary["kept"] and config is not None else [],
        "diff": _diff(history, config),
    }


def _settings(history: History, summary: dict) -> list[tuple[str, str]]:
    """How decisions were made, as label/value pairs: the rule, the floor, the noise, power."""
    m = summary.get("methodology") or {}
    decision = history.config.get("decision") or {}
    said = [("rule", m.get("rule") or "")]
    if m.get("noise_pct"):
        said.append(("noise of one run (last calibration)", f"{m['noise_pct'][-1]:.1f}%"))
    if m.get("detectable_pct"):
        said.append(("detectable with 90% power", f"{m['detectable_pct'][-1]:.1f}%"))
    if m.get("threshold_pct"):
        said.append(("the floor a keep must clear", f"{m['threshold_pct'][-1]:.2f}%"))
    for key in ("alpha", "min_runs", "max_runs", "looks", "target_effect_pct", "confirm_runs"):
        if key in decision:
            said.append((f"decision.{key}", str(decision[key])))
    return [(k, v) for k, v in said if v]


def _where(history: History, summary: dict) -> list[tuple[str, str]]:
    env = history.environment
    said = [
        ("started", env.get("started_at") or ""),
        ("host", str(env.get("host") or "")),
        ("machine", f"{env.get('os') or ''} ({env.get('machine') or ''}, "
                    f"{env.get('cpu_count') or '?'} CPUs)" if env.get("os") else ""),
        ("measured with", "; ".join((summary.get("methodology") or {}).get("toolchains") or [])),
        ("base", env.get("base_commit") or ""),
        ("tip", env.get("tip_commit") or ""),
    ]  # fmt: skip
    return [(k, v) for k, v in said if v]


def _groups(history: History, config) -> list[dict[str, Any]]:
    """The branches `finalize` would cut (a dry run: nothing written), each with whether it
    exists, its own confirmation when `finalize --confirm` measured it, and its commands."""
    from ..morning.finalize import finalize
    from ..repo.gitrepo import open_repo

    try:
        done = finalize(config, dry_run=True)
        repo = open_repo(config.repo_path)
    except UserError:
        return []
    found = []
    for g in done.groups:
        written = repo.branch_tip(g.branch)
        measured = [c for c in history.confirmations if c.get("branch") == g.branch]
        commands = [f"git checkout {g.branch}", f"autoresearch pr --branch {g.branch}"]
        if written is None:
            commands = ["autoresearch finalize --confirm", *commands]
        found.append(
            {
                "branch": g.branch,
                "shared": g.shared,
                "commit": written or g.tip,
                "written": written is not None,
                "keeps": [
                    {"n": k.n, "title": k.title, "change_pct": k.change_pct} for k in g.commits
                ],
                "confirmation": measured[-1] if measured else None,
                "commands": commands,
            }
        )
    return found


def _diff(history: History, config) -> str | None:
    """The whole change, base to tip, as git shows it (cut when long); None without one."""
    env = history.environment
    base, tip = env.get("base_commit"), env.get("tip_commit")
    if config is None or not base or not tip or base == tip:
        return None
    from ..repo.gitrepo import open_repo

    try:
        done = open_repo(config.repo_path).run("diff", "--stat", "--patch", base, tip)
    except UserError:
        return None
    if not done.ok:
        return None
    text = done.out
    if len(text) > MAX_DIFF_BYTES:
        return text[:MAX_DIFF_BYTES] + f"\n... (cut at {MAX_DIFF_BYTES // 1024} KB)"
    return text
