"""The agent presets as shipped, run with the real coding-agent CLIs from their registries
(tests/agent_clis.py, pinned) against a scripted model on 127.0.0.1 that speaks the provider's
wire protocol (tests/model_server.py): each CLI edits through its own tools, writes the
hypothesis file, and the night keeps the known win with the CLI's turns, tokens and cost.
Confined, the session has a hidden holdout, and the model first tries to read its secret
through the CLI's own tools: the read fails inside the sandbox, and the CLI says so.

Each CLI's home is a temporary directory: nothing reaches your own settings or logins.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from dataclasses import replace
from pathlib import Path

import pytest
from agent_clis import PINNED, bin_dir, cache_root
from conftest import experiments, git, run_cli
from model_server import Change, ModelServer
from test_holdout import with_holdout

from autoresearch.bench.agent_sandbox import relocated
from autoresearch.proposers.agent.cli import PRESETS

pytestmark = pytest.mark.slow  # installs the CLIs (hundreds of MB) the first time

WIN = Change(
    path="src/value.txt",
    old="100",
    new="80",
    hypothesis={
        "title": "Cut the value from 100 to 80",
        "hypothesis": "time_ms follows the value: a smaller one is faster.",
        "mechanism": "the bench sleeps in proportion to src/value.txt",
        "expected_effect": "-20% time_ms",
        "family": "value",
    },
)

# What each CLI is told, as the README's set-up says: where its provider is, and its key.
PROVIDER_ENV = {
    "claude": lambda url: {
        "ANTHROPIC_BASE_URL": url,
        "ANTHROPIC_API_KEY": "sk-ant-test",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    },
    "codex": lambda url: {"SCRIPTED_API_KEY": "sk-test"},
    "gemini": lambda url: {"GEMINI_API_KEY": "test", "GOOGLE_GEMINI_BASE_URL": url},
    "opencode": lambda url: {"SCRIPTED_API_KEY": "sk-test"},
    "aider": lambda url: {"OPENAI_API_BASE": f"{url}/v1", "OPENAI_API_KEY": "sk-test"},
}

# What else a preset's table says: Aider edits the files it is given, with the model named.
PROPOSER_OPTIONS = {"aider": 'model = "openai/coder"\nfiles = ["src/value.txt"]\n'}

# The files of each CLI's home that point it at the scripted model (an OpenAI-compatible
# provider of the user's own, for Codex).
PROVIDER_HOME = {
    "codex": lambda url: {
        ".codex/config.toml": (
            'model = "gpt-5.5"\nmodel_provider = "scripted"\n\n[model_providers.scripted]\n'
            f'name = "scripted"\nbase_url = "{url}/v1"\nenv_key = "SCRIPTED_API_KEY"\n'
            'wire_api = "responses"\n'
        )
    },
    "gemini": lambda url: {
        ".gemini/settings.json": '{"security": {"auth": {"selectedType": "gemini-api-key"}}}\n'
    },
    # OpenCode: an OpenAI-compatible provider with a price, so that its cost is computed.
    "opencode": lambda url: {
        ".config/opencode/opencode.json": json.dumps(
            {
                "$schema": "https://opencode.ai/config.json",
                "provider": {
                    "scripted": {
                        "npm": "@ai-sdk/openai-compatible",
                        "name": "Scripted",
                        "options": {"baseURL": f"{url}/v1", "apiKey": "{env:SCRIPTED_API_KEY}"},
                        "models": {"coder": {"name": "coder", "cost": {"input": 3, "output": 15}}},
                    }
                },
                "model": "scripted/coder",
            }
        )
    },
}


@pytest.fixture
def home() -> Path:
    """The CLI's home (and the user cache the agent's scratch tree lives in) for one test: out
    of /tmp, as a real home is; Codex will not set up its sandbox's helper under the temporary
    directory ("Refusing to create helper binaries under temporary dir"), and its edits fail."""
    base = cache_root() / "homes"
    base.mkdir(parents=True, exist_ok=True)
    made = Path(tempfile.mkdtemp(dir=base))
    yield made
    shutil.rmtree(made, ignore_errors=True)


def agent_night(
    target,
    home: Path,
    preset: str,
    *,
    confined: bool,
    moved: dict[str, str] | None = None,
    peek: bool | None = None,
) -> ModelServer:
    """Point the target's session at `preset`, its CLI at a scripted model; run the night.
    `moved`: variables that relocate the CLI's files (CODEX_HOME, XDG_CONFIG_HOME, ...), set
    as a user's environment sets them, its provider's files written where they point.
    Confined, with a hidden holdout the model tries to read first (`found_nothing`; `peek`
    says whether it does, by default where the CLI goes on after a failed read)."""
    if confined:
        with_holdout(target, home, sandbox="bwrap")
    text = target.config_path.read_text().replace('[proposer]\ndir = "hypotheses"\n', "")
    if confined:
        text = text.replace('[sandbox]\nmode = "off"\n', '[sandbox]\nmode = "bwrap"\n')
    proposer = f'\n[[proposer]]\nkind = "agent"\npreset = "{preset}"\nmax_proposals = 1\n'
    proposer += "timeout_s = 300\n" + PROPOSER_OPTIONS.get(preset, "")
    target.config_path.write_text(text + proposer)
    git(target.root, "commit", "-qam", f"an agent session with {preset}")
    change = WIN
    if peek if peek is not None else confined and preset in PEEKS:
        change = replace(WIN, peek=str(target.root / ".holdout" / "secret.txt"))
    with ModelServer(change) as server:
        for name, text in PROVIDER_HOME.get(preset, lambda _: {})(server.url).items():
            where = relocated(name, moved or {}, home)
            where.parent.mkdir(parents=True, exist_ok=True)
            where.write_text(text)
        env = {
            **PROVIDER_ENV[preset](server.url),
            **(moved or {}),
            "HOME": str(home),
            "XDG_CACHE_HOME": str(home / ".cache"),
            "PATH": f"{bin_dir(preset)}:{os.environ['PATH']}",
        }
        done = run_cli("run", "--accept-noise", cwd=target.root, env=env, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    return server


# The CLIs that go on after a read that failed. Aider offers the model no tool (it reads only
# the files named); OpenCode, headless, stops at a read outside the project it asked leave for
# (test_opencode_stops_at_a_read_of_the_holdout).
PEEKS = {"claude", "codex", "gemini"}


def found_nothing(server: ModelServer) -> int:
    """Where it peeked (confined), the model's first call read the holdout's secret: the CLI
    answered that there is no such file (Gemini CLI refuses first, by its own rule: a path
    outside its workspace), and the secret is nowhere in what the model was sent. The turns
    it took."""
    if not server.change.peek:
        return 0
    said = server.tool_results()[0]
    refused = r"does not exist|not found|no such file|outside the allowed workspace"
    assert re.search(refused, said, re.I), said
    assert "secret inputs" not in json.dumps(server.requests)
    return 1


def kept_the_win(target, preset: str):
    """The night's one record: the known win kept as the scripted model's hypothesis tells,
    with the CLI's version recorded as the tested one; the record."""
    (record,) = experiments(target)
    assert record.status == "keep", (record.status, record.error)
    assert record.title == WIN.hypothesis["title"] and record.family == "value"
    assert record.asi.mechanism == WIN.hypothesis["mechanism"]
    assert git(target.root, "show", "autoresearch/t:src/value.txt").strip() == "80"
    pinned = PINNED[preset][2]
    assert record.agent.cli == {"version": pinned, "tested": pinned, "note": None}
    return record


@pytest.mark.parametrize("confined", [False, True], ids=["unconfined", "confined"])
def test_claude_code_keeps_the_win_through_its_own_tools(target, home, confined):
    server = agent_night(target, home, "claude", confined=confined)
    record = kept_the_win(target, "claude")
    turns = 4 + found_nothing(server)  # (peek), read, edit, write, done

    usage = record.agent.usage
    agent_turns = server.agent_requests()
    assert usage.turns == len(agent_turns) == turns
    assert usage.input_tokens >= turns * 1200 and usage.output_tokens >= turns * 60
    assert usage.cost_usd and usage.cost_usd > 0
    assert usage.denied == ()
    # Offered only the file tools: no shell, no web.
    offered = {tool["name"] for tool in agent_turns[0]["tools"]}
    assert offered == {"Read", "Edit", "Write", "Glob", "Grep"}


@pytest.mark.parametrize("confined", [False, True], ids=["unconfined", "confined"])
def test_codex_keeps_the_win_through_apply_patch(target, home, confined):
    server = agent_night(target, home, "codex", confined=confined)
    record = kept_the_win(target, "codex")
    requests = 3 + found_nothing(server)

    usage = record.agent.usage
    assert usage.turns == 1  # one turn of Codex: (the peek), the edit, the hypothesis, done
    assert usage.input_tokens == requests * 1200 and usage.output_tokens == requests * 60
    assert usage.cost_usd is None  # Codex reports no dollars
    assert len(server.agent_requests()) == requests
    offered = {tool.get("name") or tool.get("type") for tool in server.agent_requests()[0]["tools"]}
    assert "apply_patch" in offered and "web_search" not in offered


@pytest.mark.parametrize("confined", [False, True], ids=["unconfined", "confined"])
def test_gemini_cli_keeps_the_win_with_the_web_and_shell_denied(target, home, confined):
    server = agent_night(target, home, "gemini", confined=confined)
    record = kept_the_win(target, "gemini")
    count = 4 + found_nothing(server)  # (peek), read, replace, write, done

    usage = record.agent.usage
    turns = server.agent_requests()
    assert len(turns) == count
    assert usage.input_tokens >= count * 1200 and usage.output_tokens >= count * 60
    assert usage.cost_usd is None  # Gemini CLI reports no dollars
    offered = {d["name"] for t in turns[0]["tools"] for d in t.get("functionDeclarations", [])}
    assert {"read_file", "replace", "write_file"} <= offered
    assert not offered & {"run_shell_command", "web_fetch", "google_web_search", "invoke_agent"}


@pytest.mark.parametrize("confined", [False, True], ids=["unconfined", "confined"])
def test_opencode_keeps_the_win_and_its_cost(target, home, confined):
    server = agent_night(target, home, "opencode", confined=confined)
    record = kept_the_win(target, "opencode")
    count = 4 + found_nothing(server)  # (peek), read, edit, write, done

    usage = record.agent.usage
    turns = server.agent_requests()
    assert usage.turns == len(turns) == count
    assert usage.input_tokens == count * 1200 and usage.output_tokens == count * 60
    # $3 and $15 a million tokens in and out, as the provider's price says.
    assert usage.cost_usd == pytest.approx(count * (1200 * 3 + 60 * 15) / 1e6)
    offered = {t["function"]["name"] for t in turns[0]["tools"]}
    assert {"read", "edit", "write"} <= offered
    assert not offered & {"bash", "webfetch", "websearch", "task"}


@pytest.mark.parametrize("confined", [False, True], ids=["unconfined", "confined"])
def test_aider_keeps_the_win_with_a_model_of_unknown_price(target, home, confined):
    server = agent_night(target, home, "aider", confined=confined)
    record = kept_the_win(target, "aider")

    usage = record.agent.usage
    assert usage.turns == 1 and usage.input_tokens == 1200 and usage.output_tokens == 60
    assert usage.cost_usd is None  # a model without a price: tokens, and "cost unknown"
    assert all(not r.get("tools") for r in server.requests)  # Aider offers the model no tools


def test_opencode_stops_at_a_read_of_the_holdout_and_the_record_says_so(target, home):
    """OpenCode asks leave to read outside the project, is refused (headless) and ends its run:
    no change, and the record names the read its CLI refused; the secret never reached it."""
    server = agent_night(target, home, "opencode", confined=True, peek=True)

    (record,) = experiments(target)
    assert record.status == "refused", (record.status, record.error)
    assert "its CLI refused: read " in record.error and "secret.txt" in record.error
    assert record.agent.usage.denied == (f"read {target.root}/.holdout/secret.txt",)
    assert "secret inputs" not in json.dumps(server.requests)


# The variables each CLI documents for moving its files, set to directories outside its home.
RELOCATIONS = {
    "claude": ["CLAUDE_CONFIG_DIR"],
    "codex": ["CODEX_HOME"],
    "gemini": ["GEMINI_CLI_HOME"],
    "opencode": ["XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME"],
}


@pytest.mark.parametrize("preset", sorted(RELOCATIONS))
def test_a_confined_cli_follows_the_variables_that_move_its_files(target, home, preset):
    """A user whose environment moves the CLI's files (its config, data, state) outside the
    home: confined, the CLI gets a copy of them in its own home, the variable pointed there,
    and keeps the win; what it wrote never reaches the user's directories."""
    outside = Path(tempfile.mkdtemp(dir=home.parent, prefix=f"{home.name}-moved-"))
    try:
        moved = {var: str(outside / var.lower()) for var in RELOCATIONS[preset]}
        for where in moved.values():
            Path(where).mkdir()
        agent_night(target, home, preset, confined=True, moved=moved)
        kept_the_win(target, preset)
        # The CLI's own files where the variables put them (the preset's `home` list); a
        # toolchain the loop asks its version may keep its own beside them.
        own = [relocated(rel, moved, home) for rel in PRESETS[preset]["home"]]
        mine = [p for root in own if root.is_relative_to(outside) for p in [root, *_under(root)]]
        left = sorted(str(p.relative_to(outside)) for p in mine if p.is_file())
    finally:
        shutil.rmtree(outside, ignore_errors=True)
    # Only the provider's files the user put there: the CLI wrote in its own copy.
    given = PROVIDER_HOME.get(preset, lambda _: {})("http://x")
    placed = [relocated(name, moved, home) for name in given]
    assert left == sorted(str(p.relative_to(outside)) for p in placed if p.is_relative_to(outside))


def _under(root: Path) -> list[Path]:
    return list(root.rglob("*")) if root.is_dir() else []
