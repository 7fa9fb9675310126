#!/usr/bin/env python3
"""A stand-in coding agent: a real program that edits real files and prints what the real CLI
prints, for machines where no model can be reached.

    standin_agent.py --as claude|codex|aider|gemini|opencode|command [the CLI's own arguments]

It checks the arguments the way the real CLI would (an unknown flag is an error), takes the
prompt the way that CLI does, then plays the next step of the script in $STANDIN_SCRIPT (a JSON
list; the Nth call plays step N, the last step repeats). Steps:

    {"do": "edit", "files": {"src/value.txt": "80\\n"}, "title": ..., "family": ...}
    {"do": "replay", "patch": "/path/01-x.patch"}   git apply a queue patch, its header the idea
    {"do": "nothing"}                                hypothesis written, no edit
    {"do": "crash"} | {"do": "hang"} | {"do": "error"} (the CLI reports an API error, exit 0)
and the modifiers "no_hypothesis": true (no hypothesis file), "hypothesis_text": "..." (written
as is), "commit": true (commits its edit), "move_branch": "<ref>" (moves a branch to HEAD),
"cost_usd", "turns", "break_git": true (deletes its tree's .git), "hypothesis_special":
"fifo"|"zero" (the hypothesis file made a FIFO, or a link to /dev/zero), "run": Python
source it executes after its edit, and for claude "subtype" and "denials" (its result's
`subtype` and `permission_denials`). Each call copies
the prompt and its arguments to $STANDIN_TRANSCRIPT.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path


def parse(kind: str, argv: list[str]) -> tuple[argparse.Namespace, str]:
    """The CLI's arguments, as strictly as the CLI reads them; and the prompt it was given."""
    p = argparse.ArgumentParser(prog=kind, exit_on_error=True)
    if kind == "claude":
        p.add_argument("-p", "--print", dest="prompt", required=True)
        p.add_argument("--output-format", choices=["text", "json", "stream-json"], required=True)
        p.add_argument("--max-turns", type=int, required=True)
        p.add_argument("--permission-mode", choices=["default", "acceptEdits", "plan"])
        p.add_argument("--tools", required=True)
        p.add_argument("--allowedTools", required=True)
        p.add_argument("--max-budget-usd", type=float)
        p.add_argument("--model")
        args = p.parse_args(argv)
        return args, args.prompt
    if kind == "codex":
        p.add_argument("subcommand", choices=["exec"])
        p.add_argument("--json", action="store_true", required=True)
        p.add_argument("--sandbox", choices=["read-only", "workspace-write"], required=True)
        p.add_argument("-c", "--config", action="append", default=[])
        p.add_argument("--model")
        p.add_argument("prompt")
        args = p.parse_args(argv)
        return args, args.prompt
    if kind == "aider":
        p.add_argument("--message", required=True)
        for flag in (
            "--yes-always",
            "--no-git",
            "--no-auto-commits",
            "--no-gitignore",
            "--no-pretty",
            "--no-stream",
            "--no-check-update",
            "--no-show-model-warnings",
            "--no-analytics",
        ):
            p.add_argument(flag, action="store_true")
        p.add_argument("--model")
        p.add_argument("files", nargs="*")
        args = p.parse_args(argv)
        if not (args.yes_always and args.no_auto_commits):
            p.error("a headless run needs --yes-always and --no-auto-commits")
        return args, args.message
    if kind == "gemini":
        if os.environ.get("GEMINI_CLI_TRUST_WORKSPACE") != "true":  # as the real CLI, headless
            sys.exit("Gemini CLI is not running in a trusted directory")
        p.add_argument("-p", "--prompt", required=True)
        p.add_argument("--output-format", choices=["text", "json", "stream-json"], required=True)
        p.add_argument("--approval-mode", choices=["default", "auto_edit", "yolo"], required=True)
        p.add_argument("--policy", action="append", default=[])
        p.add_argument("--model", "-m")
        args = p.parse_args(argv)
        return args, args.prompt
    if kind == "opencode":
        p.add_argument("subcommand", choices=["run"])
        p.add_argument("--format", choices=["default", "json"], required=True)
        p.add_argument("--model", "-m")
        p.add_argument("message")
        args = p.parse_args(argv)
        return args, args.message
    args = p.parse_args(argv)
    return args, Path(os.environ["AUTORESEARCH_PROMPT"]).read_text()


def next_step() -> tuple[int, dict]:
    script = Path(os.environ["STANDIN_SCRIPT"])
    steps = json.loads(script.read_text())
    counter = script.with_suffix(".count")
    n = int(counter.read_text()) if counter.exists() else 0
    counter.write_text(str(n + 1))
    return n + 1, steps[min(n, len(steps) - 1)]


def header(patch: str) -> dict:
    """A queue patch's reasoning: its `Key: value` lines before the diff."""
    found = {}
    for line in patch.splitlines():
        if line.startswith(("diff --git", "--- ")):
            break
        key, sep, value = line.partition(":")
        if sep and key.strip():
            found[key.strip().lower().replace("-", "_")] = value.strip()
    return found


def play(step: dict) -> dict:
    """Do what the step says in the working directory; the hypothesis it stands for."""
    do = step.get("do", "edit")
    idea = {
        "title": step.get("title", "stand-in edit"),
        "hypothesis": step.get("hypothesis", "a smaller value costs less time"),
        "mechanism": step.get("mechanism", "less work per operation"),
        "expected_effect": step.get("expected_effect", "-10% time_ms"),
        "family": step.get("family", "standin"),
    }
    if do == "crash":
        print("Error: the model endpoint refused the connection (stand-in)", file=sys.stderr)
        sys.exit(1)
    if do == "hang":
        time.sleep(600)
    if do == "edit":
        for rel, content in step.get("files", {}).items():
            Path(rel).parent.mkdir(parents=True, exist_ok=True)
            Path(rel).write_text(content)
    if do == "replay":
        patch = Path(step["patch"])
        subprocess.run(["git", "apply", "--whitespace=nowarn", str(patch)], check=True)
        meta = header(patch.read_text())
        idea |= {k: meta[k] for k in ("title", "hypothesis", "mechanism") if k in meta}
        idea["expected_effect"] = meta.get("expected_effect", idea["expected_effect"])
        idea["family"] = meta.get("family", patch.stem.split("-", 1)[-1])
    if step.get("commit"):
        subprocess.run(["git", "add", "-A"], check=True)
        subprocess.run(["git", "commit", "-qm", "agent commit", "--no-verify"], check=True)
    if step.get("move_branch"):
        subprocess.run(["git", "update-ref", step["move_branch"], "HEAD"], check=True)
    if step.get("break_git"):
        Path(".git").unlink()
    if step.get("run"):  # Python source: whatever else a test wants an agent to try
        exec(step["run"], {"__name__": "standin_step"})
    return idea


def report(kind: str, step: dict, n: int) -> None:
    """Print what the real CLI prints at the end of a run, usage included."""
    cost = step.get("cost_usd", 0.01)
    turns = step.get("turns", 3)
    error = step.get("do") == "error"
    if kind == "claude":
        subtype = step.get("subtype") or ("error_during_execution" if error else "success")
        print(
            json.dumps(
                {
                    "type": "result",
                    "subtype": subtype,
                    "is_error": error or subtype != "success",
                    "permission_denials": step.get("denials", []),
                    "result": "API Error: overloaded" if error else "Edited the files.",
                    "session_id": f"standin-{n}",
                    "total_cost_usd": cost,
                    "num_turns": turns,
                    "usage": {"input_tokens": 1200 * turns, "output_tokens": 150 * turns},
                }
            )
        )
    elif kind == "codex":
        print(json.dumps({"type": "thread.started", "thread_id": f"standin-{n}"}))
        print(json.dumps({"type": "turn.started"}))
        if error:
            print(json.dumps({"type": "turn.failed", "error": {"message": "usage limit hit"}}))
            return
        item = {"type": "agent_message", "text": "Edited the files."}
        print(json.dumps({"type": "item.completed", "item": item}))
        usage = {"input_tokens": 5000, "cached_input_tokens": 1000, "output_tokens": 300}
        print(json.dumps({"type": "turn.completed", "usage": usage}))
    elif kind == "aider":
        print("Aider v0.86.0\nModel: stand-in with diff edit format")
        print(f"Tokens: 3.0k sent, 42 received. Cost: ${cost:.4f} message, ${cost:.4f} session.")
    elif kind == "gemini":
        out = {
            "response": "Edited the files.",
            "stats": {
                "models": {
                    "gemini-2.5-pro": {"tokens": {"prompt": 4000, "candidates": 200, "total": 4200}}
                }
            },
        }
        if error:
            out["error"] = {"type": "ApiError", "message": "quota exceeded"}
        print(json.dumps(out))
    elif kind == "opencode":
        print(json.dumps({"type": "step_start", "part": {"type": "step-start"}}))
        print(json.dumps({"type": "text", "part": {"type": "text", "text": "Edited the files."}}))
        tokens = {"input": 3000, "output": 100, "total": 3100}
        finish = {"type": "step-finish", "reason": "stop", "cost": cost, "tokens": tokens}
        print(json.dumps({"type": "step_finish", "part": finish}))
    else:
        print("stand-in agent: edited the files")


def main() -> None:
    kind = sys.argv[2] if len(sys.argv) > 2 and sys.argv[1] == "--as" else "command"
    argv = sys.argv[3:] if kind != "command" or sys.argv[1:2] == ["--as"] else sys.argv[1:]
    if argv == ["--version"]:  # as the real CLIs print it; the tested one unless told
        from autoresearch.proposers.agent.version import TESTED

        tested = TESTED.get(kind, ("", "0.0.1"))[1]
        print(f"{os.environ.get('STANDIN_VERSION', tested)} ({kind}, stand-in)")
        return
    _args, prompt = parse(kind, argv)
    n, step = next_step()
    transcript = os.environ.get("STANDIN_TRANSCRIPT")
    if transcript:
        Path(transcript).mkdir(parents=True, exist_ok=True)
        Path(transcript, f"prompt-{n}.md").write_text(prompt)
        Path(transcript, f"argv-{n}.json").write_text(json.dumps([kind, *argv]))
    idea = play(step)
    target = Path(os.environ["AUTORESEARCH_HYPOTHESIS"])
    if step.get("hypothesis_special") == "fifo":
        os.mkfifo(target)
    elif step.get("hypothesis_special") == "zero":
        target.symlink_to("/dev/zero")
    elif "hypothesis_text" in step:
        target.write_text(step["hypothesis_text"])
    elif not step.get("no_hypothesis") and step.get("do") != "error":
        if kind == "command" and "cost_usd" in step:
            idea["cost_usd"] = step["cost_usd"]
        target.write_text(json.dumps(idea))
    report(kind, step, n)


if __name__ == "__main__":
    main()
