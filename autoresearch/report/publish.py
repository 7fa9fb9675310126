"""`finalize --open-prs`: each branch finalize wrote pushed to a remote and proposed as a pull
request with the GitHub CLI (`gh pr create`), its description the one `pr --branch` writes.

Only when asked: nothing is pushed otherwise. `gh` is given the branch (`--head`, so that it
neither forks nor pushes on its own), the title, the body as a file and, with `into`, the
branch to merge into (`--base`; else the repository's default branch, as gh chooses).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from ..config import Config
from ..errors import UserError
from ..morning.finalize import Finalized
from ..process.capture import capture
from ..repo.gitrepo import open_repo

__all__ = ["open_pull_requests", "require_gh"]

GH_TIMEOUT_S = 120.0  # a pull request made over the network


def require_gh() -> str:
    """The GitHub CLI's path; asked before anything is written."""
    gh = shutil.which("gh")
    if gh is None:
        raise UserError("--open-prs needs the GitHub CLI (gh) on PATH: https://cli.github.com")
    return gh


def open_pull_requests(
    config: Config, done: Finalized, remote: str, into: str | None, say: Callable[[str], None]
) -> list[str]:
    """Push each written branch to `remote` and open its pull request; their URLs."""
    from . import load_history
    from .branch import branch_review
    from .render import pr_title, render_pr

    gh = require_gh()
    if not done.written:
        raise UserError("--open-prs needs the branches written (not with --dry-run)")
    repo = open_repo(config.repo_path, config.target.git_hooks)
    history = load_history(config.journal_path, config.session.name)
    comparison = config.report.comparison or None
    label = config.report.comparison_label or None
    urls = []
    for group in done.groups:
        pushed = repo.run(
            "push", "--quiet", remote, f"refs/heads/{group.branch}:refs/heads/{group.branch}"
        )
        if not pushed.ok:
            why = (pushed.err or pushed.out).strip().splitlines()
            raise UserError(f"git push {remote} {group.branch} failed: {why[-1] if why else ''}")
        reviewed, summary = branch_review(config, history, group.branch, comparison, label)
        body = render_pr(
            summary,
            raw={"baseline": reviewed.baseline_log, "final": reviewed.final_log},
        )
        with tempfile.TemporaryDirectory() as tmp:
            body_file = Path(tmp) / "body.md"
            body_file.write_text(body, encoding="utf-8")
            argv = [gh, "pr", "create", "--head", group.branch, "--title", pr_title(summary)]
            argv += ["--body-file", str(body_file), *(["--base", into] if into else [])]
            made = capture(argv, cwd=repo.path, timeout_s=GH_TIMEOUT_S)
        if not made.ok:
            raise UserError(f"gh pr create for {group.branch} failed: {made.why()}")
        url = made.out.decode(errors="replace").strip().splitlines()[-1:] or [""]
        urls.append(url[0])
        say(f"{group.branch}: {url[0]}")
    return urls
