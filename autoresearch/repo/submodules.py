"""A tree's submodules: checked out in every tree the loop makes, and put back by every revert.

`git worktree add` leaves a submodule's folder empty (a C++ library's third_party/benchmark,
a vendored data set), so a build that needs one fails on the unmodified code. Each is cloned
from your repository's own copy of it (`.git/modules/<name>`, what `git submodule update`
made in your checkout) rather than from its URL: a confined build has no network, and the
clone is local and fast. One without a copy there (never initialised in your checkout) is
fetched from its URL, and a failure says which.

A revert resets what a run wrote into them, as it does the rest of the tree: `git reset` and
`git clean` stop at a submodule's folder, so a file planted there would otherwise reach the
next measurement. A submodule's own `.git` is a file in the tree, which a run may rewrite to
point at a git directory of its own making (its config's filters would then run in the loop's
git, outside the sandbox): before the loop works in a submodule, each one's `.git` is written
again from what the repository records (the submodules its commit lists, each one's git
directory under the tree's own), never read from the tree.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from ..errors import WorkspaceError
from .gitrepo import Repo, submodules_of

__all__ = ["check_out_submodules"]

# Each submodule's own tree as its commit has it, nothing untracked or ignored left.
RESET = "git reset --hard --quiet && git clean -ffdxq"


def check_out_submodules(tree: Repo) -> None:
    """The submodules of `tree`'s commit checked out at the commits it records, each as that
    commit has it; nothing when it has none."""
    if not (tree.path / ".gitmodules").is_file():
        return
    reseal(Path(tree.pinned["GIT_DIR"]), tree.path)
    listed = tree.run("config", "--file", ".gitmodules", "--get-regexp", r"^submodule\..*\.path$")
    local = ["-c", "protocol.file.allow=always"]  # a clone from a path on this machine
    for line in listed.out.splitlines():
        name = line.partition(" ")[0].removeprefix("submodule.").removesuffix(".path")
        copy = tree.common_dir / "modules" / name
        if copy.is_dir():
            local += ["-c", f"submodule.{name}.url={copy}"]
    update = tree.run(*local, "submodule", "update", "--init", "--recursive", "--force", "--quiet")
    if not update.ok:
        said = (update.err or update.out).strip().splitlines()
        raise WorkspaceError(
            f"{tree.path}: its submodules could not be checked out "
            f"({said[-1] if said else 'git submodule update failed'}); run `git submodule "
            "update --init --recursive` in your checkout, so that the loop clones them from there"
        )
    tree.must("submodule", "foreach", "--quiet", "--recursive", RESET)


def reseal(git_dir: Path, work: Path) -> None:
    """Each submodule of the commit `git_dir` has checked out in `work` given back its `.git`
    (`gitdir: <git_dir>/modules/<name>`), and so down its own submodules: what the commit's
    `.gitmodules` lists, read from the repository, not from the tree."""
    for name, rel in submodules_of(git_dir):
        module, folder = git_dir / "modules" / name, work / rel
        if not module.is_dir() or not folder.resolve().is_relative_to(work.resolve()):
            continue  # never initialised here, or a path out of the tree: nothing to put back
        if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
            folder.unlink()
        folder.mkdir(parents=True, exist_ok=True)
        dotgit = folder / ".git"
        if dotgit.is_dir() and not dotgit.is_symlink():
            shutil.rmtree(dotgit)
        else:
            dotgit.unlink(missing_ok=True)
        dotgit.write_text(f"gitdir: {module}\n", encoding="utf-8")
        reseal(module, folder)
