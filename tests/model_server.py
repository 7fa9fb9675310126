"""A scripted model on 127.0.0.1 that speaks a provider's real wire protocol, so that a real
coding-agent CLI (installed from its registry, tests/agent_clis.py) can be run end to end on a
machine that reaches no model.

The script is what a competent model would do with the loop's prompt: read the prompt for the
hypothesis file's path (the scratch tree is the directory above its hand-off directory), then,
one tool call per turn, read the file it will change, edit it, write the hypothesis file, and
say it is done. Each provider's adapter turns those steps into that provider's tool calls:

- Anthropic Messages (`POST /v1/messages`, streamed as server-sent events): Claude Code.
- OpenAI Responses (`POST /v1/responses`, streamed): Codex, whose edits are `apply_patch`
  calls (its own patch format, paths relative to its working directory).
- OpenAI chat completions (`POST /v1/chat/completions`, streamed or not): OpenCode (an
  OpenAI-compatible provider of the user's own) and Aider (which proposes no tool calls: its
  edits are SEARCH/REPLACE blocks in the answer's text, `aider_text`).
- Gemini (`POST /v1beta/models/<model>:streamGenerateContent?alt=sse`): Gemini CLI, and its
  side requests for JSON of a given schema (the model router's classification) answered with
  an object of that schema.

Every request body is kept (`requests`), so a test can assert what the CLI offered the model.
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

__all__ = ["Change", "ModelServer", "Step"]

INPUT_TOKENS, OUTPUT_TOKENS = 1200, 60  # what every answer says it cost
HYPOTHESIS_PATH = re.compile(r"(/[^\s()`'\"]+/hypothesis\.json)")


@dataclass(frozen=True)
class Change:
    """The one edit the scripted model makes, and the hypothesis it hands back."""

    path: str  # relative to the scratch tree
    old: str
    new: str
    hypothesis: dict[str, str]
    # A file the model tries to read first, where it should not (the hidden holdout's): its
    # read is one more turn, and what the CLI answers is in `tool_results()`.
    peek: str = ""


@dataclass(frozen=True)
class Step:
    """One turn of the script: a tool call (`tool` of peek | read | edit | write) or the last
    word."""

    tool: str | None
    path: Path | None = None
    args: dict[str, str] = field(default_factory=dict)
    text: str = ""


def _step(change: Change, prompt: str, done: int) -> Step:
    steps = script(change, prompt)
    return steps[min(done, len(steps) - 1)]


def script(change: Change, prompt: str) -> list[Step]:
    """The turns that carry out `change`, given the loop's prompt."""
    found = HYPOTHESIS_PATH.search(prompt)
    if found is None:
        return [Step(None, text="The prompt names no hypothesis file: nothing to do.")]
    hypothesis = Path(found.group(1))
    target = hypothesis.parent.parent / change.path
    return [
        *([Step("peek", Path(change.peek))] if change.peek else []),
        Step("read", target),
        Step("edit", target, {"old": change.old, "new": change.new}),
        Step("write", hypothesis, {"content": json.dumps(change.hypothesis)}),
        Step(None, text="Done: the edit is made and the hypothesis file written."),
    ]


class ModelServer:
    """The scripted model, serving on 127.0.0.1 in a thread of the test's process."""

    def __init__(self, change: Change):
        self.change = change
        self.requests: list[dict[str, Any]] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> ModelServer:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def agent_requests(self) -> list[dict[str, Any]]:
        """The requests of the agent's own conversation (those that offered tools)."""
        return [r for r in self.requests if r.get("tools")]

    def tool_results(self) -> list[str]:
        """What the CLI answered the model's tool calls, in order, as the last request of the
        agent's conversation carries them (each provider wraps them its own way)."""
        last = self.agent_requests()[-1]
        if "contents" in last:  # Gemini
            parts = [p for c in last["contents"] for p in c.get("parts") or []]
            return [json.dumps(p["functionResponse"]) for p in parts if "functionResponse" in p]
        if "input" in last:  # OpenAI Responses
            items = last["input"] if isinstance(last["input"], list) else []
            outputs = [i for i in items if str(i.get("type", "")).endswith("call_output")]
            return ["\n".join(_texts(i.get("output"))) for i in outputs]
        blocks = [
            b
            for m in last.get("messages") or []
            for b in (m.get("content") if isinstance(m.get("content"), list) else [])
            if isinstance(b, dict) and b.get("type") == "tool_result"
        ]
        if blocks:  # Anthropic Messages
            return ["\n".join(_texts(b.get("content"))) for b in blocks]
        tools = [m for m in last.get("messages") or [] if m.get("role") == "tool"]
        return ["\n".join(_texts(m.get("content"))) for m in tools]  # chat completions

    def answer(self, path: str, body: dict[str, Any]) -> tuple[str, Any]:
        """("sse", events) or ("json", body) for one request."""
        self.requests.append(body)
        if path.startswith("/v1/messages"):
            return _anthropic(self.change, body)
        if path.startswith("/v1/responses"):
            return _responses(self.change, body)
        if path.startswith("/v1/chat/completions"):
            return _chat(self.change, body)
        if path.startswith("/v1beta/models/"):
            return _gemini(self.change, path, body)
        return "error", {"error": {"message": f"the scripted model does not serve {path}"}}


def _handler(model: ModelServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *_: object) -> None:  # the test's output stays the test's
            pass

        def do_GET(self) -> None:
            self._send(404, "application/json", b"{}")

        def do_HEAD(self) -> None:
            self._send(200, "text/plain", b"")

        def do_POST(self) -> None:
            size = int(self.headers.get("content-length") or 0)
            try:
                body = json.loads(self.rfile.read(size) or b"{}")
            except ValueError:
                body = {}
            kind, payload = model.answer(self.path, body)
            if kind == "sse":
                data = "".join(
                    (f"event: {name}\n" if name else "")
                    + f"data: {event if isinstance(event, str) else json.dumps(event)}\n\n"
                    for name, event in payload
                ).encode()
                self._send(200, "text/event-stream", data)
            else:
                status = 404 if kind == "error" else 200
                self._send(status, "application/json", json.dumps(payload).encode())

        def _send(self, status: int, kind: str, data: bytes) -> None:
            self.send_response(status)
            self.send_header("content-type", kind)
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler


def _texts(value: Any) -> list[str]:
    """Every string in a request's messages: the prompt is in there, however it is wrapped."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _texts(v)]
    if isinstance(value, list):
        return [t for v in value for t in _texts(v)]
    return []


# Anthropic Messages: tool calls as `tool_use` blocks, the turn counted by the assistant's
# messages so far; Claude Code's own tools (Read before Edit, absolute paths).
def _anthropic(change: Change, body: dict[str, Any]) -> tuple[str, Any]:
    messages = body.get("messages") or []
    if body.get("tools"):
        steps = script(change, "\n".join(_texts(messages[:1])))
        done = sum(1 for m in messages if m.get("role") == "assistant")
        step = steps[min(done, len(steps) - 1)]
    else:  # a side request of the CLI's own (a title, a summary): a plain answer
        step = Step(None, text="ok")
    if step.tool is None:
        block = {"type": "text", "text": step.text}
        stop = "end_turn"
    else:
        name, given = {
            "peek": ("Read", {"file_path": str(step.path)}),
            "read": ("Read", {"file_path": str(step.path)}),
            "edit": (
                "Edit",
                {
                    "file_path": str(step.path),
                    "old_string": step.args.get("old"),
                    "new_string": step.args.get("new"),
                },
            ),
            "write": ("Write", {"file_path": str(step.path), "content": step.args.get("content")}),
        }[step.tool]
        block = {"type": "tool_use", "id": f"toolu_{len(messages):04d}", "name": name}
        block["input"] = given
        stop = "tool_use"
    message = {
        "id": f"msg_{len(messages):04d}",
        "type": "message",
        "role": "assistant",
        "model": body.get("model", "claude"),
        "content": [block],
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": INPUT_TOKENS, "output_tokens": OUTPUT_TOKENS},
    }
    if not body.get("stream"):
        return "json", message
    return "sse", _anthropic_events(message, block)


def _anthropic_events(message: dict[str, Any], block: dict[str, Any]) -> list[tuple[str, Any]]:
    start = {**message, "content": [], "stop_reason": None}
    start["usage"] = {"input_tokens": INPUT_TOKENS, "output_tokens": 1}
    if block["type"] == "text":
        opened = {"type": "text", "text": ""}
        delta = {"type": "text_delta", "text": block["text"]}
    else:
        opened = {**block, "input": {}}
        delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
    return [
        ("message_start", {"type": "message_start", "message": start}),
        (
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": opened},
        ),
        ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                "usage": {"output_tokens": OUTPUT_TOKENS},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]


# OpenAI Responses, as Codex uses it: `apply_patch` is a custom (free-form) tool; the turn is
# counted by the tool outputs sent back. Codex reads no file before it patches one; a peek is a
# `cat` through its shell tool, `exec_command`.
def _responses(change: Change, body: dict[str, Any]) -> tuple[str, Any]:
    items = body.get("input") or []
    if isinstance(items, str):
        items = [{"type": "message", "role": "user", "content": items}]
    outputs = sum(1 for i in items if str(i.get("type", "")).endswith("call_output"))
    prompt = "\n".join(_texts([i for i in items if i.get("role") == "user"]))
    steps = [s for s in script(change, prompt) if s.tool != "read"]
    step = steps[min(outputs, len(steps) - 1)] if body.get("tools") else Step(None, text="ok")
    n = len(items)
    if step.tool is None:
        item = {
            "type": "message",
            "role": "assistant",
            "id": f"msg_{n:04d}",
            "content": [{"type": "output_text", "text": step.text}],
        }
    elif step.tool == "peek":
        item = {
            "type": "function_call",
            "id": f"fc_{n:04d}",
            "call_id": f"call_{n:04d}",
            "name": "exec_command",
            "arguments": json.dumps({"cmd": f"cat {step.path}"}),
            "status": "completed",
        }
    else:
        assert step.path is not None
        where = _relative(step.path, prompt)
        if step.tool == "edit":
            lines = [
                f"*** Update File: {where}",
                "@@",
                f"-{step.args['old']}",
                f"+{step.args['new']}",
            ]
        else:
            content = step.args["content"].splitlines()
            lines = [f"*** Add File: {where}", *(f"+{line}" for line in content)]
        patch = "\n".join(["*** Begin Patch", *lines, "*** End Patch"]) + "\n"
        item = {
            "type": "custom_tool_call",
            "id": f"ctc_{n:04d}",
            "call_id": f"call_{n:04d}",
            "name": "apply_patch",
            "input": patch,
            "status": "completed",
        }
    usage = {
        "input_tokens": INPUT_TOKENS,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": OUTPUT_TOKENS,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": INPUT_TOKENS + OUTPUT_TOKENS,
    }
    response = {"id": f"resp_{n:04d}", "object": "response", "status": "completed"}
    return "sse", [
        ("response.created", {"type": "response.created", "response": response}),
        (
            "response.output_item.added",
            {"type": "response.output_item.added", "output_index": 0, "item": item},
        ),
        (
            "response.output_item.done",
            {"type": "response.output_item.done", "output_index": 0, "item": item},
        ),
        (
            "response.completed",
            {
                "type": "response.completed",
                "response": {**response, "output": [item], "usage": usage},
            },
        ),
    ]


def _relative(path: Path, prompt: str) -> str:
    """`path` relative to the scratch tree (the directory above the hand-off directory)."""
    found = HYPOTHESIS_PATH.search(prompt)
    assert found is not None
    return str(path.relative_to(Path(found.group(1)).parent.parent))


# Gemini: tool calls as `functionCall` parts, the turn counted by the `functionResponse` parts
# sent back; Gemini CLI's own tools (read_file before replace, absolute paths).
GEMINI_TOOLS = {"peek": "read_file", "read": "read_file", "edit": "replace", "write": "write_file"}


def _gemini(change: Change, path: str, body: dict[str, Any]) -> tuple[str, Any]:
    contents = body.get("contents") or []
    schema = (body.get("generationConfig") or {}).get("responseJsonSchema")
    if body.get("tools"):
        parts = [p for c in contents for p in c.get("parts") or []]
        answered = sum(1 for p in parts if "functionResponse" in p)
        step = _step(change, "\n".join(_texts(contents)), answered)
    else:
        step = Step(None, text=json.dumps(_instance(schema)) if schema else "ok")
    if step.tool is None:
        part: dict[str, Any] = {"text": step.text}
    else:
        args: dict[str, Any] = {"file_path": str(step.path)}
        if step.tool == "edit":
            args |= {"old_string": step.args["old"], "new_string": step.args["new"]}
            args["instruction"] = "Change the value as the hypothesis says."
        elif step.tool == "write":
            args["content"] = step.args["content"]
        part = {"functionCall": {"name": GEMINI_TOOLS[step.tool], "args": args}}
    answer = {
        "candidates": [
            {"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}
        ],
        "usageMetadata": {
            "promptTokenCount": INPUT_TOKENS,
            "candidatesTokenCount": OUTPUT_TOKENS,
            "totalTokenCount": INPUT_TOKENS + OUTPUT_TOKENS,
        },
    }
    return ("sse", [("", answer)]) if "stream" in path else ("json", answer)


def _instance(schema: dict[str, Any]) -> Any:
    """The plainest value of a JSON schema: what a side request asked for, well-formed."""
    kind = str(schema.get("type", "object")).lower()
    if kind == "object":
        properties = schema.get("properties") or {}
        return {name: _instance(sub) for name, sub in properties.items()}
    if kind == "array":
        return []
    if kind in ("integer", "number"):
        return 1
    if kind == "boolean":
        return False
    return schema.get("enum", ["ok"])[0]


# OpenAI chat completions: tool calls as `tool_calls` of the assistant's message, the turn
# counted by the `tool` messages sent back; OpenCode's tools (read before edit, camelCase).
OPENCODE_TOOLS = {"peek": "read", "read": "read", "edit": "edit", "write": "write"}


def _chat(change: Change, body: dict[str, Any]) -> tuple[str, Any]:
    messages = body.get("messages") or []
    prompt = "\n".join(_texts([m for m in messages if m.get("role") == "user"]))
    if body.get("tools"):
        answered = sum(1 for m in messages if m.get("role") == "tool")
        step = _step(change, prompt, answered)
    elif HYPOTHESIS_PATH.search(prompt):  # the loop's prompt, to a model without tools: Aider
        system = "\n".join(_texts([m for m in messages if m.get("role") == "system"]))
        step = Step(None, text=aider_text(change, prompt, "SEARCH/REPLACE" in system))
    else:
        step = Step(None, text="ok")
    message: dict[str, Any] = {"role": "assistant", "content": step.text or None}
    if step.tool is not None:
        args: dict[str, Any] = {"filePath": str(step.path)}
        if step.tool == "edit":
            args |= {"oldString": step.args["old"], "newString": step.args["new"]}
        elif step.tool == "write":
            args["content"] = step.args["content"]
        call = {"name": OPENCODE_TOOLS[step.tool], "arguments": json.dumps(args)}
        message["tool_calls"] = [
            {"id": f"call_{len(messages):04d}", "type": "function", "function": call}
        ]
    finish = "tool_calls" if step.tool else "stop"
    usage = {
        "prompt_tokens": INPUT_TOKENS,
        "completion_tokens": OUTPUT_TOKENS,
        "total_tokens": INPUT_TOKENS + OUTPUT_TOKENS,
    }
    head = {"id": f"chatcmpl-{len(messages)}", "created": 1, "model": body.get("model", "m")}
    if not body.get("stream"):
        choice = {"index": 0, "message": message, "finish_reason": finish}
        return "json", {**head, "object": "chat.completion", "choices": [choice], "usage": usage}
    delta = dict(message)
    if "tool_calls" in delta:
        delta["tool_calls"] = [{"index": 0, **c} for c in delta["tool_calls"]]
    chunk = {**head, "object": "chat.completion.chunk"}
    return "sse", [
        ("", {**chunk, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}),
        (
            "",
            {
                **chunk,
                "choices": [{"index": 0, "delta": {}, "finish_reason": finish}],
                "usage": usage,
            },
        ),
        ("", "[DONE]"),
    ]


def aider_text(change: Change, prompt: str, search_replace: bool) -> str:
    """What a model answers Aider, in the edit format its system prompt asks for: SEARCH/REPLACE
    blocks (`diff`) or whole files (`whole`, a model Aider knows nothing of), each under the
    file's path: the change, and the hypothesis file created."""
    found = HYPOTHESIS_PATH.search(prompt)
    assert found is not None
    hypothesis = _relative(Path(found.group(1)), prompt)
    # Aider created the hypothesis file empty (it was named to it): SEARCH for nothing.
    edits = [(change.path, change.old, change.new), (hypothesis, "", json.dumps(change.hypothesis))]
    if search_replace:
        blocks = [
            f"{path}\n```\n<<<<<<< SEARCH\n{old}{chr(10) if old else ''}=======\n{new}\n"
            ">>>>>>> REPLACE\n```"
            for path, old, new in edits
        ]
    else:  # the whole new content: the scripted change replaces the file's one line
        blocks = [f"{path}\n```\n{new}\n```" for path, _old, new in edits]
    return "Here are the changes.\n\n" + "\n\n".join(blocks)
