"""A tree's submodules: checked out in every tree the loop makes, and put back by every revert.

`git worktree add` leaves a submodule's folder empty (a C++ library's third_party/benchmark,
a vendored data set), so a build that needs one fails on the unmodified code. Each is cloned
from your repository's own copy of it (`.git/modules/<name>`, what `git submodule update`
made in your checkout) rather than from its URL: a confined build has no network, and the
clone is local and fast. One without a copy there (never initialised in your checkout) is
fetched from its URL, and a failure says which.

A revert resets what a run wrote into them, as it does the rest of the tree: `git reset` and
`git clean` stop at a submodule's folder, so a file planted there would otherwise reach the
next measurement.
"""

from __future__ import annotations

from ..errors import WorkspaceError
from .gitrepo import Repo

__all__ = ["check_out_submodules"]

# Each submodule's own tree as its commit has it, nothing untracked or ignored left.
RESET = "git reset --hard --quiet && git clean -ffdxq"


def check_out_submodules(tree: Repo) -> None:
    """The submodules of `tree`'s commit checked out at the commits it records, each as that
    commit has it; nothing when it has none."""
    if not (tree.path / ".gitmodules").is_file():
        return
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
