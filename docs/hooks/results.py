"""MkDocs hook: `<!-- results: NAME -->` in a page becomes a table of the latest runs of
benchmarks/NAME.py, read from docs/results/NAME/*.json (benchmarks/results.py writes them).
A marker with no results is an error: a page cannot quote a benchmark that never ran."""

from __future__ import annotations

import json
import re
from pathlib import Path

RESULTS = Path(__file__).resolve().parent.parent / "results"
MARKER = re.compile(r"<!-- results: ([\w-]+)(?: (\d+))? -->")
SHOWN = 3  # runs of a benchmark shown, the latest first


def on_page_markdown(markdown: str, page, config, files) -> str:
    return MARKER.sub(lambda m: _table(m.group(1), int(m.group(2) or SHOWN), page), markdown)


def _cell(value) -> str:
    """A row's value as a table cell: a list's items and a mapping's entries one after another."""
    if isinstance(value, list):
        return ", ".join(map(str, value))
    if isinstance(value, dict):
        return "; ".join(f"{k}: {v}" for k, v in value.items())
    return str(value)


def _table(name: str, shown: int, page) -> str:
    runs = [json.loads(p.read_text()) for p in sorted((RESULTS / name).glob("*.json"))]
    if not runs:
        raise ValueError(f"{page.file.src_path}: no results of benchmarks/{name}.py to show")
    runs.sort(key=lambda r: r["at"], reverse=True)
    columns = list(dict.fromkeys(k for r in runs[:shown] for row in r["rows"] for k in row))
    columns.remove("condition")
    head = ["run", "condition", *columns]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for run in runs[:shown]:
        said = (
            f"{run['at'][:10]}, {run['host']} ({run['cpus']} CPUs), "
            f"`{run['commit'][:10]}`{' (uncommitted changes)' if run['dirty'] else ''}"
        )
        for row in run["rows"]:
            cells = [said, row["condition"], *(_cell(row.get(c, "")) for c in columns)]
            out.append("| " + " | ".join(cells) + " |")
    last = runs[0]
    out.append(f"\n<small>`{last['command']}`; files in `docs/results/{name}/`</small>\n")
    return "\n".join(out)
