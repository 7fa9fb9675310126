"""`autoresearch mcp` through the SDK's own client over stdio: a whole small session."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import pytest
from conftest import experiments, git, unified_patch


def call(client, name: str, **arguments):
    return client.call_tool(name, arguments)


def payload(result):
    """A tool's answer: its structured content, or the JSON of its text."""
    assert not result.is_error, result.content
    if result.structured_content is not None:
        data = result.structured_content
        return data.get("result", data) if set(data) == {"result"} else data
    return json.loads(result.content[0].text)


def _server(target, env: dict[str, str]):
    """`autoresearch mcp` over stdio, in the repository, as an agent starts it. The SDK is
    imported here: a second's import, paid only by the worker that runs these tests."""
    from mcp.client.stdio import StdioServerParameters

    args = ["-m", "autoresearch.cli", "mcp"]
    return StdioServerParameters(command=sys.executable, args=args, cwd=str(target.root), env=env)


def _client(server, timeout_s: float):
    from mcp import Client

    return Client(server, read_timeout_seconds=timeout_s)


@pytest.mark.e2e
def test_a_small_session_driven_over_mcp(target):
    server = _server(target, {**os.environ, "BENCH_NOISE_PCT": "0"})
    win = unified_patch("src/value.txt", "100\n", "80\n")

    async def session():
        async with _client(server, 300) as client:
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
    assert done["status"] == "keep", _with_log(done)
    assert round(done["change_pct"], 6) == -20.0
    assert loss["status"] == "discard" and loss["rule"], _with_log(loss)
    assert [h["status"] for h in history] == ["keep", "discard"]
    assert history[1]["family"] == "waste"
    assert ideas == ["- presize the batches"]
    assert "kept (1)" in report and "Faster" in report
    assert [r.status for r in experiments(target)] == ["keep", "discard"]
    assert git(target.root, "show", "autoresearch/t:src/value.txt") == "80\n"


def _with_log(outcome: dict) -> str:
    """A try's outcome and, when it names one, its log: why a try ended as it did."""
    log = outcome.get("log")
    text = Path(log).read_text(errors="replace") if log and os.path.exists(log) else ""
    return f"{outcome}\n{text[-4000:]}"


@pytest.mark.e2e
def test_odd_tool_arguments_get_a_one_line_error(target):
    """What a confused agent sends: each answer is an error result naming the problem (the
    SDK's generic "Error executing tool" alone would mean a crash, its traceback on stderr)."""
    server = _server(target, dict(os.environ))
    win = unified_patch("src/value.txt", "100\n", "80\n")
    odd = [
        ("try_result", {"id": "try-../x"}, "is not a try id"),
        ("try_result", {"id": "try-\0"}, "NUL byte"),
        ("try_result", {"id": "try-20260101T000000"}, "no try try-20260101T000000"),
        ("try_result", {"id": "x", "wait_s": "NaN"}, "nan is not a number"),
        ("try_start", {"title": "t", "patch": win, "worktree": "."}, "not both"),
        ("try_start", {"title": "a\0b", "patch": win}, "NUL byte"),
        ("ideas_add", {"text": "\0"}, "NUL byte"),
        ("try_start", {"title": "t", "worktree": "/nonexistent/tree"}, "is not a directory"),
        ("history", {"last": -5}, "last must be 0 (all of them) or more"),
        ("history", {"last": "many"}, "valid integer"),  # the SDK's schema check
    ]

    async def session():
        answers = []
        async with _client(server, 120) as client:
            for name, arguments, _ in odd:
                answers.append(await client.call_tool(name, arguments))
            state = await client.call_tool("state", {})  # still serving
        return answers, state

    answers, state = asyncio.run(session())
    for (name, _, expected), answer in zip(odd, answers, strict=True):
        assert answer.is_error, (name, answer.content)
        text = answer.content[0].text
        assert expected in text, (name, text)
        assert "Traceback" not in text
        if name != "history":
            assert "\n" not in text, text
    assert not state.is_error
    assert experiments(target) == []
