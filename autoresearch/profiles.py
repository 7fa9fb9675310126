"""Where the time goes: sampled stacks of the best's bench, as folded stacks, and what they say.

A profile is a run of `[profile] command` off the timed runs (bench/profiling.py), taken when
the best is calibrated and kept with the session (`<state>/profiles/<commit>.folded`). Every
profiler's output becomes the one format flame graphs use: a line per distinct stack, root
first, frames joined by `;`, then its sample count (`main;run;Get 31`). From it: the frames
that cost the most by self time (samples where the frame is the leaf) and by total time
(samples whose stack holds it), and, between the best before a keep and the kept commit, the
frames whose share moved most: the evidence that the mechanism a change claimed is the one
that acted.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

__all__ = [
    "FORMATS",
    "Folded",
    "fold",
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


def fold(text: str, format: str) -> Folded:
    """The folded stacks of a profiler's text output: already folded, `go tool pprof -traces`
    or `perf script`."""
    if format == "folded":
        return _parse_folded(text)
    if format == "pprof":
        return _fold_traces(text)
    if format == "perf":
        return _fold_perf_script(text)
    raise ValueError(f"unknown profile format {format!r} (one of {', '.join(FORMATS)})")


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
        frames, weight = [], 0
        for line in block.strip("\n").splitlines():
            first = re.match(r"^\s*(\d+(?:\.\d+)?)(ns|us|µs|ms|s)?\s+(\S.*)$", line)
            if not frames and first:
                weight = _nanoseconds(float(first.group(1)), first.group(2) or "")
                frames.append(first.group(3).strip().removesuffix(" (inline)"))
            elif frames and line.strip():
                frames.append(line.strip().removesuffix(" (inline)"))
        if frames and weight:
            stacks[_stack(list(reversed(frames)))] += max(1, round(weight / 1e6))  # in ms
    return dict(stacks)


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
    return ";".join(f.replace(";", ":")[:MAX_FRAME] for f in frames if f)


def top_frames(folded: Folded, n: int = 15) -> list[dict]:
    """The `n` frames with the most total time, each with its self and total share (percent)
    of all samples, the most expensive first."""
    whole = sum(folded.values())
    if not whole:
        return []
    own: Counter[str] = Counter()
    total: Counter[str] = Counter()
    for stack, count in folded.items():
        frames = stack.split(";")
        own[frames[-1]] += count
        for frame in set(frames):
            total[frame] += count
    ranked = sorted(total, key=lambda f: (-total[f], -own[f], f))
    return [
        {
            "frame": frame,
            "self_pct": round(100 * own[frame] / whole, 2),
            "total_pct": round(100 * total[frame] / whole, 2),
        }
        for frame in ranked[:n]
    ]


def profile_change(before: Folded, after: Folded, n: int = 8) -> list[dict]:
    """The frames whose share of the time moved most from `before` to `after` (total time,
    percent of each profile's samples), the largest move first."""
    shares = [{t["frame"]: t["total_pct"] for t in top_frames(p, 10**6)} for p in (before, after)]
    frames = set(shares[0]) | set(shares[1])
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
    return {"commit": commit, "samples": sum(folded.values()), "top": top_frames(folded, top)}


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
    for t in summary["top"][:shown]:
        out.append(f"  {t['total_pct']:5.1f}% {t['self_pct']:5.1f}%  {short_frame(t['frame'])}")
    return out


def short_frame(frame: str) -> str:
    """A frame without its package path (`github.com/x/y.(*T).M` -> `y.(*T).M`)."""
    return frame.rsplit("/", 1)[-1]
