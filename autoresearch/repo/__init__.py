"""Everything that touches git or paths: the repository, the worktrees, patches, guards."""
