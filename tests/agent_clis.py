#!/usr/bin/env python3
"""The real coding-agent CLIs the presets are tested with, installed from their registries at
pinned versions into a cache directory of their own (never your global npm or Python).

    python3 tests/agent_clis.py [name ...]    install them (all by default); .ci/run does

The cache is `$AUTORESEARCH_CLI_CACHE`, else `~/.cache/autoresearch-clis`: one directory per
CLI and version, made whole or not at all (an install cut short is made again).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

# name -> (registry, package, version, the executable's name)
PINNED = {
    "claude": ("npm", "@anthropic-ai/claude-code", "2.1.197", "claude"),
    "codex": ("npm", "@openai/codex", "0.169.0", "codex"),
    "gemini": ("npm", "@google/gemini-cli", "0.61.0", "gemini"),
    "opencode": ("npm", "opencode-ai", "1.18.33", "opencode"),
    "aider": ("pypi", "aider-chat", "0.86.2", "aider"),
}


def cache_root() -> Path:
    given = os.environ.get("AUTORESEARCH_CLI_CACHE")
    return Path(given) if given else Path.home() / ".cache" / "autoresearch-clis"


def bin_dir(name: str) -> Path:
    """Where the pinned CLI's executable is, installing it first when it is not there."""
    registry, package, version, _ = PINNED[name]
    home = cache_root() / f"{name}-{version}"
    if not (home / ".complete").exists():
        _install(registry, package, version, home)
    return home / "node_modules" / ".bin" if registry == "npm" else home / "bin"


def _install(registry: str, package: str, version: str, home: Path) -> None:
    shutil.rmtree(home, ignore_errors=True)  # a cut-short install: its marker was never written
    home.mkdir(parents=True)
    if registry == "npm":
        argv = ["npm", "install", "--no-audit", "--no-fund", "--prefix", str(home)]
        argv.append(f"{package}@{version}")
    else:  # a virtual environment where it stays: its scripts name their interpreter's path
        subprocess.run([sys.executable, "-m", "venv", str(home)], check=True, timeout=300)
        argv = [str(home / "bin" / "pip"), "install", "--quiet", f"{package}=={version}"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=1200)
    if done.returncode != 0:
        raise RuntimeError(f"installing {package}@{version} failed:\n{done.stderr[-2000:]}")
    (home / ".complete").write_text(f"{package} {version}\n")


def main(names: list[str]) -> int:
    for name in names or list(PINNED):
        where = bin_dir(name)
        _, package, version, executable = PINNED[name]
        print(f"{name}: {package} {version} in {where / executable}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
