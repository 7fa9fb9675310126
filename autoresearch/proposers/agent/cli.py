"""The coding-agent CLIs the agent proposer runs: how to call each without a person, and how to
read what it reports of its cost.

Every preset is a bash command run in the scratch worktree, with the prompt's path in
`$AUTORESEARCH_PROMPT` and the path of the hypothesis file the agent writes in
`$AUTORESEARCH_HYPOTHESIS`; a preset's `files` are written beside the prompt first. The flags
are the ones each CLI documents for headless use, chosen so that the agent edits files and
nothing else asks a question:

- Claude Code: `claude -p` (print mode) with `--output-format json`, `--max-turns`,
  `--permission-mode acceptEdits`, and `--tools` and `--allowedTools` both limited to reading
  and editing files (no shell, no web), `--max-budget-usd` when a per-proposal limit is set.
  Its JSON result carries `total_cost_usd`, `num_turns` and `usage`.
- Codex: `codex exec --json --sandbox workspace-write -c web_search="disabled"`, stdin closed
  (it would wait for more input otherwise). Its JSONL events carry token `usage` on
  `turn.completed`; no dollars.
- Aider: `--message` with `--yes-always`, `--no-git` (it would `git add` the files it creates
  and write a placeholder identity into the repository's config: the loop diffs the tree
  itself), `--no-auto-commits`, `--no-gitignore`, no colours or streaming, and the in-scope
  files named with the hypothesis file. It prints `Tokens: 2.3k sent, 450 received. Cost:
  $0.01 message, $0.02 session.`
- Gemini CLI: `gemini -p` with `--output-format json`, `--approval-mode auto_edit` (edit
  tools approved) and a `--policy` file that denies the shell, the web and sub-agents. Its
  JSON `stats` carries tokens per model; no dollars.
- OpenCode: `opencode run --format json`, with `OPENCODE_CONFIG_CONTENT` (a run's own config,
  over yours) denying the shell, the web and sub-agents; its JSONL `step_finish` events carry
  `cost` and `tokens`.
- `command`: anything else, run as written. It may report its own usage in the hypothesis file
  (`cost_usd`, `input_tokens`, `output_tokens`, `turns`), or name a preset's `output` format.
"""

from __future__ import annotations

import json
import math
import re
import shlex
from typing import Any

from ...journal.agent_run import Usage

__all__ = ["OUTPUTS", "PRESETS", "preset_command", "read_usage"]

PROMPT = '"$(cat "$AUTORESEARCH_PROMPT")"'
OPENCODE_DENY = json.dumps(
    {"permission": {t: "deny" for t in ("bash", "webfetch", "websearch", "task")}},
    separators=(",", ":"),
)

# `home`: what of your home directory a confined agent gets a copy of in its own (its login,
# settings): the CLI's own config and credentials, nothing else of yours.
PRESETS: dict[str, dict[str, Any]] = {
    "claude": {
        "command": (
            f"claude -p {PROMPT} --output-format json --max-turns {{max_turns}} "
            "--permission-mode acceptEdits --tools {allowed_tools} --allowedTools {allowed_tools}"
            "{max_usd}{model}"
        ),
        "output": "claude-json",
        "ignore": [".claude/**"],
        "home": [".claude", ".claude.json"],
    },
    "codex": {
        # Codex reads through its shell tool (in its own workspace-write sandbox: no network,
        # writes only in the tree) and edits with apply_patch; its web search is turned off.
        "command": (
            "codex exec --json --sandbox workspace-write -c 'web_search=\"disabled\"'"
            f"{{model}} {PROMPT} < /dev/null"
        ),
        "output": "codex-jsonl",
        "ignore": [],
        "home": [".codex"],
    },
    "aider": {
        "command": (
            f"aider --message {PROMPT} --yes-always --no-git --no-auto-commits --no-gitignore "
            "--no-pretty --no-stream --no-check-update --no-show-model-warnings "
            # The hypothesis file is named too: Aider writes only files in its chat, and
            # without git its root is the directory the files named have in common.
            '--no-analytics{model} {files} "$AUTORESEARCH_HYPOTHESIS"'
        ),
        "output": "aider",
        "ignore": [".aider*", ".aider*/**"],
        "home": [".aider.conf.yml", ".aider"],
    },
    "gemini": {
        # A fresh scratch tree is not a trusted folder: untrusted, Gemini CLI refuses headless
        # edits (exit 55). The variable trusts the workspace for this run only.
        # Its policy file (beside the prompt) denies the web, the shell and sub-agents: denied
        # tools are not offered to the model at all.
        "command": (
            f"GEMINI_CLI_TRUST_WORKSPACE=true gemini -p {PROMPT} --output-format json "
            '--approval-mode auto_edit --policy "$(dirname "$AUTORESEARCH_PROMPT")/'
            'gemini-policy.toml"{model}'
        ),
        "files": {
            "gemini-policy.toml": (
                "[[rule]]\n"
                'toolName = ["run_shell_command", "web_fetch", "google_web_search", '
                '"invoke_agent"]\n'
                'decision = "deny"\npriority = 900\n'
            )
        },
        "output": "gemini-json",
        "ignore": [".gemini/**"],
        "home": [".gemini"],
    },
    "opencode": {
        # Its permission rules, given for this run only, deny the shell, the web and
        # sub-agents: a tool denied outright is not offered to the model.
        "command": (
            "OPENCODE_CONFIG_CONTENT="
            + shlex.quote(OPENCODE_DENY).replace("{", "{{").replace("}", "}}")  # for .format
            + " "
            + f"opencode run --format json{{model}} {PROMPT}"
        ),
        "output": "opencode-jsonl",
        "ignore": [".opencode/**"],
        "home": [".config/opencode", ".local/share/opencode"],
    },
    "command": {"command": "", "output": "none", "ignore": [], "home": []},
}
OUTPUTS = ("claude-json", "codex-jsonl", "aider", "gemini-json", "opencode-jsonl", "none")
# Claude Code's file tools. `--tools` is the set the model is offered (without it, Bash, WebFetch
# and twenty more are offered too); `--allowedTools` runs them without asking.
ALLOWED_TOOLS = "Read,Edit,Write,Glob,Grep"


def preset_command(
    preset: str,
    *,
    command: str | None,
    model: str | None,
    max_turns: int,
    max_usd: float | None,
    files: list[str],
) -> str:
    """The bash command one proposal runs."""
    if preset == "command":
        assert command, "the command preset needs its command"
        return command
    if command:  # a preset's own command, as the user wrote it (a wrapper, a path)
        return command
    return PRESETS[preset]["command"].format(
        max_turns=max_turns,
        allowed_tools=shlex.quote(ALLOWED_TOOLS),
        max_usd=f" --max-budget-usd {max_usd:g}" if max_usd is not None else "",
        model=f" --model {shlex.quote(model)}" if model else "",
        files=" ".join(shlex.quote(f) for f in files),
    )


def read_usage(output_format: str, text: str, hypothesis: dict | None = None) -> Usage:
    """The usage a CLI printed (its log), or the one a plain command wrote in its hypothesis."""
    reader = _READERS.get(output_format)
    usage = reader(text) if reader else Usage()
    if usage == Usage() and hypothesis:
        usage = _from_hypothesis(hypothesis)
    return usage


def _json_objects(text: str) -> list[dict]:
    """Every line (or the whole text) that is a JSON object: CLIs mix logs with their JSON."""
    found = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                value = json.loads(line)
            except ValueError:
                continue
            if isinstance(value, dict):
                found.append(value)
    if not found:
        start = text.find("{")
        if start >= 0:
            try:
                value = json.loads(text[start:])
            except ValueError:
                value = None
            if isinstance(value, dict):
                found.append(value)
    return found


def _object(item: dict, key: str) -> dict:
    """`item[key]` when it is a JSON object, else an empty one: a CLI's JSON is not always of
    the shape its documentation gives."""
    value = item.get(key)
    return value if isinstance(value, dict) else {}


MAX_COUNT = 1e15  # tokens, turns, dollars: a larger number is not a measurement


def _number(value: Any) -> float | None:
    """A count the agent reported, or None (unknown) when it is not a finite, non-negative
    number within reason: `1e400` (infinity in JSON) or -5 is not a cost."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if isinstance(value, int):
        return float(value) if 0 <= value <= MAX_COUNT else None
    return value if math.isfinite(value) and 0 <= value <= MAX_COUNT else None


def _int(value: Any) -> int | None:
    number = _number(value)
    return None if number is None else int(number)


def _claude(text: str) -> Usage:
    results = [o for o in _json_objects(text) if o.get("type") == "result"]
    if not results:
        return Usage()
    result = results[-1]
    usage = _object(result, "usage")
    error = None
    subtype = str(result.get("subtype", "success"))
    if result.get("is_error") or subtype != "success":
        error = CLAUDE_STOPS.get(subtype) or str(
            result.get("result") or subtype or "the agent reported an error"
        )
    return Usage(
        cost_usd=_number(result.get("total_cost_usd")),
        input_tokens=_int(usage.get("input_tokens")),
        output_tokens=_int(usage.get("output_tokens")),
        turns=_int(result.get("num_turns")),
        error=error,
        denied=_denials(result.get("permission_denials")),
    )


# Claude Code's result subtypes that are stops the loop set, said as such.
CLAUDE_STOPS = {
    "error_max_turns": "it reached its turn limit (max_turns) before finishing",
    "error_max_budget_usd": "it reached its per-proposal budget (max_usd) before finishing",
}


def _denials(found: Any) -> tuple[str, ...]:
    """Claude Code's `permission_denials`: each refused tool call as "Tool path"."""
    if not isinstance(found, list):
        return ()
    said = []
    for denial in found[:20]:
        if not isinstance(denial, dict):
            continue
        tool = str(denial.get("tool_name") or "a tool")[:40]
        given = _object(denial, "tool_input")
        said.append(_refused(tool, given))
    return tuple(said)


def _refused(tool: str, given: dict) -> str:
    """A refused tool call said as "Tool path" (or its command)."""
    target = (
        given.get("file_path") or given.get("filePath") or given.get("path")
        or given.get("command") or ""
    )  # fmt: skip
    return f"{tool} {str(target)[:200]}".strip()


# OpenCode's answer to a call its permissions reject (a path outside the project, headless).
OPENCODE_REJECTED = "rejected permission"


def _codex(text: str) -> Usage:
    tokens_in = tokens_out = None
    turns = 0
    error = None
    for event in _json_objects(text):
        kind = event.get("type")
        if kind == "turn.completed" and isinstance(event.get("usage"), dict):
            turns += 1
            tokens_in = (tokens_in or 0) + (_int(event["usage"].get("input_tokens")) or 0)
            tokens_out = (tokens_out or 0) + (_int(event["usage"].get("output_tokens")) or 0)
        elif kind in ("turn.failed", "error"):
            failure = event.get("error")
            detail = failure if isinstance(failure, dict) else event
            error = str(detail.get("message") or kind)
    return Usage(None, tokens_in, tokens_out, turns or None, error)


_AIDER = re.compile(
    r"Tokens:\s*([\d.,]+)([km]?)\s*sent,\s*([\d.,]+)([km]?)\s*received\."
    r"(?:\s*Cost:\s*\$([\d.]+)\s*message(?:,\s*\$([\d.]+)\s*session)?)?",
    re.I,
)


def _aider_count(number: str, suffix: str) -> int:
    scale = {"k": 1_000, "m": 1_000_000}.get(suffix.lower(), 1)
    return int(float(number.replace(",", "")) * scale)


def _aider(text: str) -> Usage:
    matches = list(_AIDER.finditer(text))
    if not matches:
        return Usage()
    tokens_in = sum(_aider_count(m.group(1), m.group(2)) for m in matches)
    tokens_out = sum(_aider_count(m.group(3), m.group(4)) for m in matches)
    last = matches[-1]
    cost = None
    if last.group(6):  # the session's running total
        cost = float(last.group(6))
    elif all(m.group(5) for m in matches):
        cost = sum(float(m.group(5)) for m in matches)
    return Usage(cost, tokens_in, tokens_out, len(matches))


def _gemini(text: str) -> Usage:
    objects = [o for o in _json_objects(text) if "stats" in o or "response" in o or "error" in o]
    if not objects:
        return Usage()
    result = objects[-1]
    stats = _object(result, "stats")
    tokens_in = tokens_out = None
    models = _object(stats, "models")
    for model in models.values():
        tokens = model.get("tokens") if isinstance(model, dict) else None
        if isinstance(tokens, dict):
            tokens_in = (tokens_in or 0) + (_int(tokens.get("prompt")) or 0)
            tokens_out = (tokens_out or 0) + (_int(tokens.get("candidates")) or 0)
    error = result.get("error")
    if isinstance(error, dict):
        error = str(error.get("message") or error)
    return Usage(None, tokens_in, tokens_out, None, str(error) if error else None)


def _opencode(text: str) -> Usage:
    cost = tokens_in = tokens_out = None
    steps = 0
    error = None
    denied: list[str] = []
    for event in _json_objects(text):
        part = _object(event, "part")
        state = _object(part, "state")
        if OPENCODE_REJECTED in str(state.get("error", "")) and len(denied) < 20:
            given = _object(state, "input")
            denied.append(_refused(str(part.get("tool") or "a tool")[:40], given))
        if event.get("type") == "step_finish":
            steps += 1
            if _number(part.get("cost")) is not None:
                cost = (cost or 0.0) + float(part["cost"])
            tokens = _object(part, "tokens")
            if _int(tokens.get("input")) is not None:
                tokens_in = (tokens_in or 0) + (_int(tokens["input"]) or 0)
            if _int(tokens.get("output")) is not None:
                tokens_out = (tokens_out or 0) + (_int(tokens["output"]) or 0)
        elif event.get("type") == "error":
            detail = event.get("error")
            error = str(detail.get("message", detail) if isinstance(detail, dict) else detail)
    return Usage(cost, tokens_in, tokens_out, steps or None, error, tuple(denied))


def _from_hypothesis(data: dict) -> Usage:
    return Usage(
        cost_usd=_number(data.get("cost_usd")),
        input_tokens=_int(data.get("input_tokens")),
        output_tokens=_int(data.get("output_tokens")),
        turns=_int(data.get("turns")),
    )


_READERS = {
    "claude-json": _claude,
    "codex-jsonl": _codex,
    "aider": _aider,
    "gemini-json": _gemini,
    "opencode-jsonl": _opencode,
}
