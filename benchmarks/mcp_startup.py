"""How long `autoresearch mcp` takes to answer a client: from the process's start to its answer
to `initialize`, and to the tool list, quiet and with another process keeping a core busy.

    python benchmarks/mcp_startup.py [--runs 10]

A client starts its MCP servers beside itself and waits for them before the first turn (Claude
Code's `MCP_TIMEOUT`, 30 s by default); the server must answer well inside that on a busy
machine. Runs in a fresh git repository made by `autoresearch init`; plain JSON-RPC lines over
stdio, as the MCP stdio transport carries them.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from machine_load import a_core_busy
from results import record

GOAL_S = 2.0  # well inside any client's wait for its servers


def _request(proc: subprocess.Popen, message: dict) -> None:
    assert proc.stdin is not None
    proc.stdin.write(json.dumps(message) + "\n")
    proc.stdin.flush()


def _answer(proc: subprocess.Popen, wanted: int) -> dict:
    assert proc.stdout is not None
    while True:
        line = proc.stdout.readline()
        if not line:
            raise SystemExit(f"the server ended before answering request {wanted}")
        message = json.loads(line)
        if message.get("id") == wanted:
            return message


def one_start(repo: Path) -> tuple[float, float, int]:
    """Seconds to the `initialize` answer, seconds to the tool list, and how many tools."""
    started = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "autoresearch.cli", "mcp"],
        cwd=repo,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        hello = {"protocolVersion": "2025-06-18", "capabilities": {}}
        hello["clientInfo"] = {"name": "bench", "version": "0"}
        _request(proc, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello})
        _answer(proc, 1)
        initialized = time.perf_counter() - started
        _request(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        _request(proc, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        tools = _answer(proc, 2)["result"]["tools"]
        listed = time.perf_counter() - started
    finally:
        proc.kill()
        proc.wait()
    return initialized, listed, len(tools)


def make_repo(root: Path) -> Path:
    repo = root / "repo"
    env = {**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@localhost"}
    env |= {"GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@localhost"}
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    (repo / "main.go").write_text("package main\n\nfunc main() {}\n")
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    subprocess.run(["git", "commit", "-qm", "init"], cwd=repo, check=True, env=env)
    init = [sys.executable, "-m", "autoresearch.cli", "init", "--metric", "t_ms", "--unit", "ms"]
    subprocess.run(init, cwd=repo, check=True, capture_output=True)
    return repo


def measure(repo: Path, runs: int, label: str) -> dict:
    found = [one_start(repo) for _ in range(runs)]
    initialized = statistics.median(f[0] for f in found)
    listed = statistics.median(f[1] for f in found)
    verdict = "met" if listed < GOAL_S else "MISSED"
    print(
        f"| {label} | {initialized * 1000:.0f} ms | {listed * 1000:.0f} ms | {found[0][2]} | "
        f"{verdict} (goal < {GOAL_S:g} s) |"
    )
    return {
        "condition": label,
        "`initialize` answered": f"{initialized * 1000:.0f} ms",
        "tools listed": f"{listed * 1000:.0f} ms",
        "tools": found[0][2],
        "goal": f"{verdict} (< {GOAL_S:g} s)",
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10, help="starts per condition")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        repo = make_repo(Path(tmp))
        one_start(repo)  # the first start compiles the bytecode: not what a client waits for
        print(f"`autoresearch mcp`, {args.runs} starts each, medians\n")
        print("| condition | `initialize` answered | tools listed | tools | goal |")
        print("|---|---:|---:|---:|---|")
        rows = [measure(repo, args.runs, "quiet")]
        with a_core_busy():
            rows.append(measure(repo, args.runs, "a core busy"))
    record("mcp_startup", rows, notes=f"{args.runs} starts each, medians")
    return 0


if __name__ == "__main__":
    sys.exit(main())
