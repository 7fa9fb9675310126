"""The bundled target's session: its config, and a queue whose patches apply in any kept subset."""

from __future__ import annotations

import random
import subprocess
from pathlib import Path

import pytest

from autoresearch.config import load_config
from autoresearch.proposers import parse_patch_file
from autoresearch.repo.globs import matches_any
from autoresearch.repo.patchcheck import check_paths, patch_paths
from autoresearch.repo.workspace import open_workspace

ROOT = Path(__file__).resolve().parent.parent
CONFIG = load_config(ROOT / "autoresearch.toml")
QUEUE = sorted((ROOT / "targets/pebble/hypotheses").glob("*.patch"))


def test_config_names_the_target_metrics():
    assert CONFIG.metric.name == "pebble_writepack_100k_ms"
    assert [s.name for s in CONFIG.sentinel] == ["sqlite_writepack_10k_ms"]
    assert CONFIG.sentinel[0].budget_pct == 5.0
    protected = CONFIG.protected_globs()
    for path in ("autoresearch.sh", "autoresearch.checks.sh", "targets/pebble/go.mod"):
        assert matches_any(path, protected), path


def test_queue_has_a_dozen_hypotheses_with_their_reasoning():
    assert len(QUEUE) >= 12
    for path in QUEUE:
        h = parse_patch_file(path)
        assert h.title and h.title != path.stem, path
        assert h.hypothesis and h.mechanism and h.expected_effect, path
        assert h.patch.startswith(b"diff --git "), path


@pytest.mark.parametrize("path", QUEUE, ids=lambda p: p.stem)
def test_every_patch_stays_in_scope(path, tmp_path):
    h = parse_patch_file(path)
    problem = check_paths(
        h.text,
        patch_paths(h.text),
        worktree=ROOT,
        include=CONFIG.scope.include,
        protect=CONFIG.protected_globs(),
        allow_binary=False,
    )
    assert problem is None, problem


@pytest.mark.e2e
def test_patches_apply_in_queue_order_on_any_kept_subset(tmp_path):
    """What the loop meets: each patch on top of whichever earlier ones were kept."""
    repo = tmp_path / "repo"
    subprocess.run(["git", "clone", "-q", "--shared", str(ROOT), str(repo)], check=True)
    ws = open_workspace(repo, "autoresearch/subsets", tmp_path / "wt", "HEAD")
    base = ws.tip()
    rng = random.Random(7)
    subsets = [[True] * len(QUEUE)] + [[rng.random() < 0.5 for _ in QUEUE] for _ in range(12)]
    for keep_mask in subsets:
        ws.tree.must("update-ref", f"refs/heads/{ws.branch}", base)
        ws.revert()
        for path, keep in zip(QUEUE, keep_mask, strict=True):
            h = parse_patch_file(path)
            patch_file = tmp_path / "p.patch"
            patch_file.write_bytes(h.patch)
            applied = ws.apply(patch_file)
            assert applied.ok, f"{path.name} after {keep_mask}: {applied.message}"
            if keep:
                ws.keep(patch_paths(h.text), h.title)
            else:
                ws.revert()
