"""`autoresearch mcp` through the SDK's own client over stdio: a whole small session."""

from __future__ import annotations

import asyncio
import json
import os
import sys

from conftest import experiments, git, unified_patch
from mcp import Client
from mcp.client.stdio import StdioServerParameters


def call(client, name: str, **arguments):
    return client.call_tool(name, arguments)


def payload(result):
    """A tool's answer: its structured content, or the JSON of its text."""
    assert not result.is_error, result.content
    if result.structured_content is not None:
        data = result.structured_content
        return data.get("result", data) if set(data) == {"result"} else data
    return json.loads(result.content[0].text)


def test_a_small_session_driven_over_mcp(target):
    server = StdioServerParameters(
        command=sys.executable,
        args=["-m", "autoresearch.cli", "mcp"],
        cwd=str(target.root),
        env={**os.environ, "BENCH_NOISE_PCT": "0"},
    )
    win = unified_patch("src/value.txt", "100\n", "80\n")

    async def session():
        async with Client(server, read_timeout_seconds=300) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert set(tools) >= {
                "state",
                "history",
                "ideas_list",
                "ideas_add",
                "try_start",
                "try_result",
                "report",
            }
            assert tools["try_start"].annotations.read_only_hint is False
            assert tools["state"].annotations.read_only_hint is True
            assert "title" in tools["try_start"].input_schema["properties"]
            before = payload(await call(client, "state"))
            started = payload(await call(client, "try_start", title="Faster", patch=win))
            done = payload(await call(client, "try_result", id=started["id"], wait_s=240))
            # A loss, from the agent's worktree (the repository checkout) as it is now.
            (target.root / "src" / "value.txt").write_text("130\n")
            lost = payload(await call(client, "try_start", title="Slower", family="waste"))
            loss = payload(await call(client, "try_result", id=lost["id"], wait_s=240))
            history = payload(await call(client, "history", last=5))
            ideas = payload(await call(client, "ideas_add", text="presize the batches"))
            report = payload(await call(client, "report"))
            return before, done, loss, history, ideas, report

    before, done, loss, history, ideas, report = asyncio.run(session())
    assert before["experiments"] == 0
    assert done["status"] == "keep", done
    assert round(done["change_pct"], 6) == -20.0
    assert loss["status"] == "discard" and loss["rule"]
    assert [h["status"] for h in history] == ["keep", "discard"]
    assert history[1]["family"] == "waste"
    assert ideas == ["- presize the batches"]
    assert "kept (1)" in report and "Faster" in report
    assert [r.status for r in experiments(target)] == ["keep", "discard"]
    assert git(target.root, "show", "autoresearch/t:src/value.txt") == "80\n"
