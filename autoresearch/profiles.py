"""Where the time goes: sampled stacks of the best's bench, as folded stacks, and what they say.

A profile is a run of `[profile] command` off the timed runs (bench/profiling.py), taken when
the best is calibrated and kept with the session (`<state>/profiles/<commit>.folded`). Every
profiler's output becomes the one format flame graphs use: a line per distinct stack, root
first, frames joined by `;`, then its sample count (`main;run;Get 31`). From it: the frames
that cost the most by self time (samples where the frame is the leaf) and by total time
(samples whose stack holds it), and, between the best before a keep and the kept commit, the
frames whose share moved most: the evidence that the mechanism a change claimed is the one
that acted.

A profiler that says where each frame was (py-spy, `go tool pprof -lines`) writes the frame as
`name (file:line)`, the file relative to the tree that ran. The line is kept in the stored
stacks but left out of a frame's identity (`function`): a function's samples are one frame,
and the line that costs it the most is told beside it (`top_frames`' "line").
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

__all__ = [
    "FORMATS",
    "Folded",
    "fold",
    "function",
    "in_tree",
    "load_profile",
    "moves_between",
    "profile_change",
    "profile_lines",
    "profile_summary",
    "save_profile",
    "short_frame",
    "top_frames",
]

Folded = dict[str, int]  # "root;...;leaf" -> samples
FORMATS = ("folded", "pprof", "perf")  # what `[profile] format` may say the command wrote
MAX_FRAME = 160  # characters of a frame kept: C++ templates and Go closures run long


OUTSIDE = "…/"  # the start of a file outside the tree that ran
# `name (file:line)` or `name (file)`: a file has a dot or a slash (not `f (inline)`).
LOCATED = re.compile(r"^(?P<name>.*?) \((?P<file>[^()]*?[./][^()]*?)(?::(?P<line>\d+))?\)$")


def fold(text: str, format: str, roots: tuple[str, ...] = ()) -> Folded:
    """The folded stacks of a profiler's text output: already folded, `go tool pprof -traces
    -lines` or `perf script`. Files under one of `roots` (where the run saw its tree) are
    named relative to it; others by their last two parts after `…/`."""
    if format == "folded":
        folded = _parse_folded(text)
    elif format == "pprof":
        folded = _fold_traces(text)
    elif format == "perf":
        folded = _fold_perf_script(text)
    else:
        raise ValueError(f"unknown profile format {format!r} (one of {', '.join(FORMATS)})")
    return _relative(folded, roots) if any("(" in stack for stack in folded) else folded


def _relative(folded: Folded, roots: tuple[str, ...]) -> Folded:
    prefixes = [root.rstrip("/") + "/" for root in roots if root]
    out: Counter[str] = Counter()
    for stack, count in folded.items():
        frames = []
        for frame in stack.split(";"):
            found = LOCATED.match(frame)
            if found and found["file"].startswith("/"):
                file = found["file"]
                inside = next((file[len(p) :] for p in prefixes if file.startswith(p)), None)
                file = inside or OUTSIDE + "/".join(file.rsplit("/", 2)[-2:])
                line = f":{found['line']}" if found["line"] else ""
                frame = f"{found['name']} ({file}{line})"
            frames.append(frame)
        out[";".join(frames)] += count
    return dict(out)


def in_tree(frame: str) -> bool:
    """Whether the profiler placed `frame` in a file of the tree that ran (its own code, not
    the interpreter's, the runtime's or a dependency's)."""
    found = LOCATED.match(frame)
    return found is not None and not found["file"].startswith((OUTSIDE, "<"))


def function(frame: str) -> str:
    """A frame's identity: its name, and its file when the profiler gave one, not its line."""
    found = LOCATED.match(frame)
    return f"{found['name']} ({found['file']})" if found else frame


def _parse_folded(text: str) -> Folded:
    stacks: Counter[str] = Counter()
    for line in text.splitlines():
        stack, _, count = line.rstrip().rpartition(" ")
        if stack and count.isdigit():
            stacks[_stack(stack.split(";"))] += int(count)
    return dict(stacks)


def _fold_traces(text: str) -> Folded:
    """`go tool pprof -traces`: blocks split by dashed lines, the first line of each holding
    the sample's value and the leaf, the next ones its callers."""
    stacks: Counter[str] = Counter()
    for block in re.split(r"^-+\+-+$", text, flags=re.M):
        frames: list[str] = []
        weight: float = 0
        for line in block.strip("\n").splitlines():
            first = re.match(r"^\s*(\d+(?:\.\d+)?)(ns|us|µs|ms|s)?\s+(\S.*)$", line)
            if not frames and first:
                weight = _nanoseconds(float(first.group(1)), first.group(2) or "")
                frames.append(_traced_frame(first.group(3)))
            elif frames and line.strip():
                frames.append(_traced_frame(line))
        if frames and weight:
            stacks[_stack(list(reversed(frames)))] += max(1, round(weight / 1e6))  # in ms
    return dict(stacks)


def _traced_frame(text: str) -> str:
    """`name /path/file.go:88` (with `-lines`) as `name (/path/file.go:88)`; a name alone as is."""
    text = text.strip().removesuffix(" (inline)")
    name, _, where = text.rpartition(" ")
    return f"{name} ({where})" if name and re.fullmatch(r"/\S+:\d+", where) else text


def _nanoseconds(value: float, unit: str) -> float:
    return value * {"ns": 1, "us": 1e3, "µs": 1e3, "ms": 1e6, "s": 1e9}.get(unit, 1)


def _fold_perf_script(text: str) -> Folded:
    """`perf script`: a header line per sample (the command first), then one frame a line
    (`addr symbol+offset (dso)`), leaf first, a blank line after. The command is the root."""
    stacks: Counter[str] = Counter()
    for block in text.split("\n\n"):
        lines = [line for line in block.splitlines() if line.strip()]
        if not lines:
            continue
        frames = []
        for line in lines[1:]:
            parts = line.strip().split(None, 1)
            symbol = parts[1] if len(parts) > 1 else parts[0]
            symbol = re.sub(r"\s+\([^)]*\)$", "", symbol)  # the dso
            symbol = re.sub(r"\+0x[0-9a-f]+$", "", symbol)  # the offset
            frames.append(symbol if symbol != "[unknown]" else "?")
        if frames:
            command = lines[0].split()[0]
            stacks[_stack([command, *reversed(frames)])] += 1
    return dict(stacks)


def _stack(frames: list[str]) -> str:
    return ";".join(_bounded(f.replace(";", ":")) for f in frames if f)


def _bounded(frame: str) -> str:
    """At most MAX_FRAME characters of a frame's name; its location (`(file:line)`) whole."""
    found = LOCATED.match(frame)
    if not found:
        return frame[:MAX_FRAME]
    return f"{found['name'][:MAX_FRAME]} {frame[len(found['name']) + 1 :]}"


def top_frames(folded: Folded, n: int = 15) -> list[dict]:
    """The `n` functions with the most total time, each with its self and total share
    (percent) of all samples and, where the profiler said, the line of it that costs the most
    (with what it calls), the most expensive first."""
    whole = sum(folded.values())
    if not whole:
        return []
    own: Counter[str] = Counter()
    total: Counter[str] = Counter()
    lines: dict[str, Counter[str]] = {}
    for stack, count in folded.items():
        frames = stack.split(";")
        own[function(frames[-1])] += count
        for name in {function(frame) for frame in frames}:  # a recursion counts once
            total[name] += count
        for frame in set(frames):
            found = LOCATED.match(frame)
            if found and found["line"]:
                lines.setdefault(function(frame), Counter())[
                    f"{found['file']}:{found['line']}"
                ] += count
    ranked = sorted(total, key=lambda f: (-total[f], -own[f], f))
    return [
        {
            "frame": frame,
            "self_pct": round(100 * own[frame] / whole, 2),
            "total_pct": round(100 * total[frame] / whole, 2),
            **({"line": lines[frame].most_common(1)[0][0]} if frame in lines else {}),
        }
        for frame in ranked[:n]
    ]


def profile_change(before: Folded, after: Folded, n: int = 8) -> list[dict]:
    """The frames whose share of the time moved most from `before` to `after` (total time,
    percent of each profile's samples), the largest move first; the repository's own where
    the profiler says which those are."""
    shares = [{t["frame"]: t["total_pct"] for t in top_frames(p, 10**6)} for p in (before, after)]
    frames = set(shares[0]) | set(shares[1])
    # Where the profiler placed frames in files, the repository's own: a harness's frames
    # (pytest's, the runtime's) move only because the code under them did.
    frames = {f for f in frames if in_tree(f)} or frames
    moves = [
        {"frame": f, "before_pct": shares[0].get(f, 0.0), "after_pct": shares[1].get(f, 0.0)}
        for f in frames
    ]
    moves.sort(key=lambda m: (-abs(m["after_pct"] - m["before_pct"]), m["frame"]))
    return [m for m in moves[:n] if m["before_pct"] != m["after_pct"]]


def save_profile(path: Path, folded: Folded) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    partial.write_text("".join(f"{stack} {count}\n" for stack, count in sorted(folded.items())))
    partial.replace(path)


def load_profile(path: Path) -> Folded | None:
    try:
        return _parse_folded(path.read_text(encoding="utf-8", errors="replace"))
    except OSError:
        return None


def profile_summary(path: Path, commit: str, top: int) -> dict | None:
    """The top frames of the profile stored at `path` (of `commit`), for `state` and the
    agent's prompt; None without one."""
    folded = load_profile(path)
    if not folded:
        return None
    frames = top_frames(folded, 10**6)
    own = [t for t in frames if in_tree(t["frame"])][:top]  # a harness's start can dwarf it
    return {"commit": commit, "samples": sum(folded.values()), "top": frames[:top], "own": own}


def moves_between(before: Path, after: Path) -> list[dict]:
    """Where the time moved from one stored profile to another; [] unless both exist."""
    old, new = load_profile(before), load_profile(after)
    return profile_change(old, new) if old and new else []


def profile_lines(summary: dict | None, shown: int = 8) -> list[str]:
    """A stored profile's top frames as `status` and `profile` print them."""
    if not summary:
        return []
    out = [f"where the time goes ({summary['commit'][:10]}, {summary['samples']:,} samples; "
           "total and self time):"]  # fmt: skip
    out += _frame_lines(summary["top"][:shown])
    own = summary.get("own") or []
    if own and own != summary["top"][: len(own)]:
        out += ["in the repository's own code:", *_frame_lines(own[:shown])]
    return out


def _frame_lines(frames: list[dict]) -> list[str]:
    return [
        f"  {t['total_pct']:5.1f}% {t['self_pct']:5.1f}%  {short_frame(t['frame'])}"
        + (f"  at {t['line']}" if t.get("line") else "")
        for t in frames
    ]


def short_frame(frame: str) -> str:
    """A frame without its package path (`github.com/x/y.(*T).M` -> `y.(*T).M`) and with
    only its file's name (`work (pkg/bench.py)` -> `work (bench.py)`)."""
    found = LOCATED.match(frame)
    if not found:
        return frame.rsplit("/", 1)[-1]
    return f"{found['name'].rsplit('/', 1)[-1]} ({found['file'].rsplit('/', 1)[-1]})"
