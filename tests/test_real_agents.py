"""The agent presets as shipped, run with the real coding-agent CLIs from their registries
(tests/agent_clis.py, pinned) against a scripted model on 127.0.0.1 that speaks the provider's
wire protocol (tests/model_server.py): each CLI edits through its own tools, writes the
hypothesis file, and the night keeps the known win with the CLI's turns, tokens and cost.

Each CLI's home is a temporary directory: nothing reaches your own settings or logins.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from agent_clis import PINNED, bin_dir
from conftest import experiments, git, run_cli
from model_server import Change, ModelServer

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

# What each CLI is told, as its README set-up says: where its provider is, and its key.
PROVIDER_ENV = {
    "claude": lambda url: {
        "ANTHROPIC_BASE_URL": url,
        "ANTHROPIC_API_KEY": "sk-ant-test",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    },
}


def agent_night(target, tmp_path: Path, preset: str, *, confined: bool) -> ModelServer:
    """Point the target's session at `preset`, its CLI at a scripted model; run the night."""
    text = target.config_path.read_text().replace('[proposer]\ndir = "hypotheses"\n', "")
    if confined:
        text = text.replace('[sandbox]\nmode = "off"\n', '[sandbox]\nmode = "bwrap"\n')
    proposer = f'\n[[proposer]]\nkind = "agent"\npreset = "{preset}"\nmax_proposals = 1\n'
    target.config_path.write_text(text + proposer + "timeout_s = 300\n")
    git(target.root, "commit", "-qam", f"an agent session with {preset}")
    home = tmp_path / "home"
    home.mkdir()
    with ModelServer(WIN) as server:
        env = {
            **PROVIDER_ENV[preset](server.url),
            "HOME": str(home),
            "PATH": f"{bin_dir(preset)}:{os.environ['PATH']}",
        }
        done = run_cli("run", "--accept-noise", cwd=target.root, env=env, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    return server


@pytest.mark.parametrize("confined", [False, True], ids=["unconfined", "confined"])
def test_claude_code_keeps_the_win_through_its_own_tools(target, tmp_path, confined):
    server = agent_night(target, tmp_path, "claude", confined=confined)

    (record,) = experiments(target)
    assert record.status == "keep", (record.status, record.error)
    assert record.title == WIN.hypothesis["title"]
    assert record.asi.mechanism == WIN.hypothesis["mechanism"] and record.family == "value"
    assert git(target.root, "show", "autoresearch/t:src/value.txt").strip() == "80"
    usage = record.agent["usage"]
    agent_turns = server.agent_requests()
    assert usage["turns"] == len(agent_turns) == 4  # read, edit, write, done
    assert usage["input_tokens"] >= 4 * 1200 and usage["output_tokens"] >= 4 * 60
    assert usage["cost_usd"] and usage["cost_usd"] > 0
    assert usage["denied"] == []
    assert record.agent["cli"] == {
        "version": PINNED["claude"][2],
        "tested": "2.1.197",
        "note": None,
    }
    # Offered only the file tools: no shell, no web.
    offered = {tool["name"] for tool in agent_turns[0]["tools"]}
    assert offered == {"Read", "Edit", "Write", "Glob", "Grep"}
