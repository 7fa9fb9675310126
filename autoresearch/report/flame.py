"""A profile drawn as an icicle (a flame graph, root at the top): inline SVG, nothing fetched.

Each frame is a box as wide as its share of the samples, its callers above it. Drawn for a
keep, against the best's profile before it, a box is red where that code takes a larger share
of the time than before and blue where it takes less (the darker, the more), and its tooltip
says both shares: the differential profile, at a glance.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from html import escape

from ..profiles import Folded, function, short_frame, top_frames

__all__ = ["icicle_svg"]

WIDTH = 1000
ROW = 17
MAX_DEPTH = 40
MIN_SHARE = 0.004  # boxes narrower than this share of the width are left out


@dataclass
class _Node:
    name: str
    samples: int = 0
    children: dict[str, _Node] = field(default_factory=dict)


def _tree(folded: Folded) -> _Node:
    root = _Node("all")
    for stack, count in folded.items():
        node = root
        node.samples += count
        for frame in map(function, stack.split(";")[:MAX_DEPTH]):  # a box per function
            node = node.children.setdefault(frame, _Node(frame))
            node.samples += count
    return root


def icicle_svg(after: Folded, before: Folded | None = None) -> str:
    """The icicle of `after`, colored by how each frame's share moved from `before`."""
    root = _tree(after)
    if not root.samples:
        return ""
    was = {t["frame"]: t["total_pct"] for t in top_frames(before, 10**6)} if before else {}
    now = {t["frame"]: t["total_pct"] for t in top_frames(after, 10**6)}
    boxes: list[str] = []
    depth = _draw(root, 0.0, WIDTH, 0, root.samples, boxes, now, was if before else None)
    height = (depth + 1) * ROW
    return (
        f'<svg class="icicle" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {height}" '
        f'width="100%" role="img" aria-label="profile">'
        f"<style>text{{font:11px sans-serif;pointer-events:none}}</style>{''.join(boxes)}</svg>"
    )


def _draw(node, x, width, depth, whole, boxes, now, was) -> int:
    """Draw `node` at (`x`, `depth`) and its children under it; the deepest row reached."""
    share = 100 * node.samples / whole
    color = _color(now.get(node.name, share), was.get(node.name, 0.0) if was is not None else None)
    label = short_frame(node.name)
    moved = "" if was is None else f" (was {was.get(node.name, 0.0):.1f}%)"
    tip = escape(f"{node.name}: {share:.1f}% of the samples{moved}")
    y = depth * ROW
    text = ""
    if width > 40:  # room for a few letters of its name
        text = f'<text x="{x + 3:.1f}" y="{y + 12}">{escape(label[: int(width / 6.5)])}</text>'
    boxes.append(
        f'<g><title>{tip}</title><rect x="{x:.1f}" y="{y}" width="{max(width - 0.5, 0.5):.1f}" '
        f'height="{ROW - 1}" fill="{color}"/>{text}</g>'
    )
    deepest, offset = depth, x
    for child in sorted(node.children.values(), key=lambda c: -c.samples):
        part = width * child.samples / node.samples
        if part / WIDTH >= MIN_SHARE:
            deepest = max(deepest, _draw(child, offset, part, depth + 1, whole, boxes, now, was))
        offset += part
    return deepest


def _color(share: float, before: float | None) -> str:
    """Warm for a plain profile; red where the share grew, blue where it fell, by how much."""
    if before is None:
        return f"hsl({30 + int(min(share, 100) / 4)}, 80%, 62%)"
    moved = max(-1.0, min(1.0, (share - before) / 20))  # 20 points of share: full color
    if abs(moved) < 0.02:
        return "hsl(0, 0%, 82%)"
    hue = 0 if moved > 0 else 215
    return f"hsl({hue}, 75%, {88 - int(abs(moved) * 38)}%)"
