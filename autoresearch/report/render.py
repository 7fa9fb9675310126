"""A summary as text for the terminal, as Markdown, as JSON, and as a pull-request description.

Markdown comes from jinja2 templates; a user's template directory overrides the built-in ones
file by file.
"""

from __future__ import annotations

import functools
import json
import math
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup

from ..bench.proc import read_log
from ..errors import UserError
from ..inert import code, commit_line, fenced, markdown, quoted
from ..profiles import short_frame
from ..progress import counted, format_value
from .profiled import SHOWN_MOVES
from .summary import MAJOR_WIN_PCT

# The experiments of each "what did not work" group the PR lists by name: GitHub takes a pull
# request's description up to 65,536 characters, and a season's night has thousands of them.
NOT_KEPT_SHOWN = 25
# Those `report` lists: a season's text report is read, not scrolled through 100,000 lines.
# Each group's latest (`--all` and the JSON list every one); summarize(listed=) keeps only them.
NOT_KEPT_LISTED = 30

__all__ = [
    "RAW_LINES",
    "render_json",
    "render_markdown",
    "render_pr",
    "render_template",
    "render_text",
]

LINE_WIDTH = 160  # of the text report's lines about experiments
RAW_LINES = 60  # of each raw bench output in the PR: the head, where the rows and METRICs are
BUILTIN = Path(__file__).resolve().parent.parent / "templates"


def _pct(value, digits: int = 1) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{value:+.{digits}f}%"


def _times(value) -> str:
    return "n/a" if value is None else f"{value:.2f}x"


def _num(value, unit: str = "") -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    if abs(value) >= 10_000:
        return f"{value:,.0f} {unit}".strip()
    return format_value(value, unit)


def _duration(seconds) -> str:
    if not seconds:
        return "0 s"
    minutes, secs = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return (
        f"{hours} h {minutes} min"
        if hours
        else f"{minutes} min {secs} s"
        if minutes
        else f"{secs} s"
    )


def _shorten(line: str, width: int = LINE_WIDTH) -> str:
    """At most `width` characters, cut at a word boundary with an ellipsis, never mid-word."""
    if len(line) <= width:
        return line
    cut = line[: width - 1].rsplit(" ", 1)[0]
    return cut.rstrip(",;:") + "…"


def _markdown_value(value: object) -> object:
    """What a Markdown template's `{{ }}` writes: a value made inert (inert.markdown), unless
    the code that made it wrote it as Markdown (`Markup`: its untrusted parts inert already)."""
    return value if isinstance(value, Markup) else markdown("" if value is None else value)


def _moved(moves: list[dict[str, Any]]) -> Markup:
    """Where a kept change moved the best's time, as Markdown: each frame (the candidate's
    code names it) in a code span nothing in it can close."""
    return Markup(
        "; ".join(
            f"{code(short_frame(m['frame']))} {m['before_pct']:.1f}% → {m['after_pct']:.1f}%"
            for m in moves[:SHOWN_MOVES]
        )
    )


@functools.lru_cache(maxsize=8)
def _environment(templates: Path | None, html: bool) -> jinja2.Environment:
    """One environment per template directory and kind, and so each template compiled once a
    process (`serve` and the MCP server render again and again): jinja2 reloads a template
    whose file changed since (`auto_reload`), so a template edited meanwhile is the one
    rendered. A value in HTML is escaped as HTML; in Markdown (the PR, the report, an agent's
    prompt) it is made inert: it says what it says and does nothing else (inert.py)."""
    paths = [str(templates)] if templates else []
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader([*paths, str(BUILTIN)]),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=False,
        autoescape=html,
        finalize=None if html else _markdown_value,
    )
    env.filters |= {
        "pct": _pct,
        "pct1": lambda v: _pct(v).lstrip("+"),
        "times": _times,
        "num": _num,
        "duration": _duration,
        "cell": lambda v: Markup(markdown("" if v is None else v)),
        "code": lambda v: Markup(code(v)),
        "fenced": lambda v: Markup(fenced(str(v))),
        "quoted": lambda v: Markup(quoted(v)),
        "moved": _moved,
        # A macro's output: its own values were made inert as it rendered them.
        "rendered": Markup,
        "counted": counted,
        "knob": lambda v: (
            "?" if v is None else (f"{int(v)}" if float(v).is_integer() else f"{v:g}")
        ),
    }
    return env


def render_template(name: str, templates: Path | None, **context) -> str:
    if templates and not templates.is_dir():
        raise UserError(f"{templates}: template directory not found ([report] templates)")
    try:
        html = name.endswith((".html", ".html.j2"))
        template = _environment(templates, html).get_template(name)
        return template.render(**context)
    except jinja2.TemplateSyntaxError as exc:
        raise UserError(f"{exc.filename}:{exc.lineno}: template error: {exc.message}") from None
    except jinja2.UndefinedError as exc:
        raise UserError(f"template {name}: {exc.message}") from None


def render_markdown(summary: dict, templates: Path | None = None) -> str:
    return render_template("report.md.j2", templates, s=summary)


def render_json(summary: dict) -> str:
    return json.dumps(summary, indent=2, default=str, allow_nan=False)


def render_pr(
    summary: dict, templates: Path | None = None, raw: dict | None = None, root: Path | None = None
) -> str:
    """The PR description; `raw` maps baseline/final to log paths of their bench output. The
    paths under `root` (the repository) are said relative to it: a reviewer's machine has
    none of the author's absolute paths."""
    raw_text = {k: _head(read_log(v)) if v else None for k, v in (raw or {}).items()}
    text = render_template(
        "pr.md.j2",
        templates,
        s=summary,
        title=pr_title(summary),
        raw={"baseline": raw_text.get("baseline"), "final": raw_text.get("final")},
        major_pct=MAJOR_WIN_PCT,
    )
    return text.replace(f"{root}/", "") if root is not None else text


def pr_title(summary: dict) -> str:
    change = summary["headline_change_pct"]
    what = f"{summary['metric']} {_pct(change)}" if change is not None else summary["metric"]
    span = (
        f" ({_num(summary['baseline']['value'], summary['unit'])} → "
        f"{_num(summary['final']['value'], summary['unit'])})"
    )
    # A title is plain text on GitHub: no reference or mention in it acts (inert.py).
    return commit_line(f"perf: {what}{span}")


def _head(text: str) -> str | None:
    lines = text.splitlines()
    if not lines:
        return None
    more = len(lines) - RAW_LINES
    return "\n".join(lines[:RAW_LINES]) + (f"\n... ({more} more lines)" if more > 0 else "")


def render_text(summary: dict) -> str:
    """The terminal report."""
    s = summary
    out = _text_head(s)
    out += _text_outcomes(s)
    out += _text_searches(s)
    out += _text_runs(s)
    for i in s.get("imported", []):
        out += _text_imported(i)
    out += [f"warning: {w}" for w in s["warnings"]]
    return "\n".join(out) + "\n"


def _text_head(s: dict) -> list[str]:
    """The session, its counts, baseline and best, the confirmation, the metrics table."""
    counts = s["counts_said"]
    out = [
        f"{s['name']}  ({s['format']} journal {s['source']}; --session NAME shows another)",
        f"experiments: {s['experiments']} ({counts})",
        "",
        f"baseline: {s['baseline']['label']}: {s['baseline']['why']}",
        f"best:     {s['final']['label']}",
    ]
    c = s["confirmation"]
    if c and c.get("change_pct") is not None:
        out.append(
            f"confirmed: {_pct(c['change_pct'], 2)} (95% CI {_pct(c['ci_low_pct'], 2)} to "
            f"{_pct(c['ci_high_pct'], 2)}, {c['runs_per_arm']} runs each)"
        )
        held = c.get("holdout") or {}
        if held.get("change_pct") is not None:
            out.append(
                f"           {_pct(held['change_pct'], 2)} (95% CI {_pct(held['ci_low_pct'], 2)} "
                f"to {_pct(held['ci_high_pct'], 2)}) on the hidden holdout ({held['metric']})"
            )
    width = max(len(m["name"]) for m in s["metrics"])
    out += ["", f"{'metric':<{width}}  {'baseline':>14}  {'best':>14}  {'change':>8}"]
    for m in s["metrics"]:
        out.append(
            f"{m['name']:<{width}}  {_num(m['baseline'], m['unit']):>14}  "
            f"{_num(m['final'], m['unit']):>14}  {_pct(m['change_pct']):>8}"
        )
    return out


def _text_outcomes(s: dict) -> list[str]:
    """What was kept, and what was not and why."""
    out = ["", f"kept ({len(s['wins'])}):"]
    for w in s["wins"]:
        earlier = f" ({w['earlier']})" if w.get("earlier") else ""
        held = f"; {w['holdout']}" if w.get("holdout") else ""
        out.append(f"  #{w['n']:<4} {_pct(w['change_pct']):>8}  {w['title']}{earlier}{held}")
        if w["mechanism"]:
            out.append(f"         {'':>8}  {w['mechanism']}")
        if w.get("profile_said"):
            out.append(f"         {'':>8}  where the time moved: {w['profile_said']}")
    if s.get("contributions"):
        out += ["", "what each keep adds to the tip (the tip without it, against the tip):"]
        for c in s["contributions"]:
            out.append(
                f"  #{c['n']:<4} {_pct(c['change_pct']):>8}  {c['title']}: {c['verdict']} "
                f"({_pct(c['ci_low_pct'])} to {_pct(c['ci_high_pct'])}, {c['runs']} pairs)"
            )
    out += ["", "not kept:" if s["not_kept"] else "not kept: none"]
    for g in s["not_kept"]:
        out.append(f"  {g['reason']} ({g['count']}):")
        if g["left"]:
            out.append(f"    … {g['left']} earlier (`report --all` lists every one)")
        for e in g["experiments"]:
            why = f": {e['why']}" if e["why"] else ""
            title = e["title"] + (f" ({e['earlier']})" if e.get("earlier") else "")
            out.append(_shorten(f"    #{e['n']:<4} {_pct(e['change_pct']):>8}  {title}{why}"))
    return out


def _text_searches(s: dict) -> list[str]:
    """Each knob sweep and joint search, step by step."""
    out = []
    for k in s.get("sweeps", []):
        out += [
            "",
            f"sweep {k['line']} ({counted(k['experiments'], 'experiment')}, {k['kept']} kept):",
        ]
        for row in k["rows"]:
            move = f"{row['from']:g} -> {row['value']:g}"
            out.append(
                f"    #{row['n']:<4} {move:>14} {_pct(row['change_pct']):>8}  {row['status']}"
            )
    for j in s.get("joint", []):
        out += ["", f"{j['line']} ({j['experiments']} trials, {j['kept']} kept):"]
        for row in j["rows"]:
            out.append(
                _shorten(
                    f"    #{row['n']:<4} {_pct(row['change_pct']):>8}  {row['status']:<13} "
                    f"{row['moves']}"
                )
            )
    return out


def _text_runs(s: dict) -> list[str]:
    """What the night cost in bench runs and time, and where its hypotheses came from."""
    r = s["runs"]
    runs = f"bench runs: {r['bench_runs']}"
    if r["calibration_runs"] or r["confirmation_runs"]:
        runs += (
            f" ({r['experiment_runs']} deciding experiments, {r['calibration_runs']} calibrating"
            f", {r['confirmation_runs']} confirming)"
        )
    if r["per_decision"]:
        runs += f", {r['per_decision']:.1f} per decision"
    if r["bench_s"]:
        runs += f"; {_duration(r['bench_s'])} benching"
    if r["checks_s"]:
        runs += f", {_duration(r['checks_s'])} in checks"
    out = ["", runs]
    method = s.get("methodology") or {}
    if method.get("statistic"):
        out.append(f"the metric: {method['statistic']}")
    if method.get("noise_pct"):
        line = f"noise (the last calibration): {method['noise_pct'][-1]:.1f}% a run"
        if method.get("detectable_pct"):
            line += f", {method['detectable_pct'][-1]:.1f}% detectable with 90% power"
        out.append(line)
    if s.get("proposers"):
        out.append("hypotheses from: " + "; ".join(p["line"] for p in s["proposers"]))
    if s.get("hosts_lost"):
        out.append(f"bench hosts lost: {s['hosts_lost']}")
    return out


def _text_imported(i: dict) -> list[str]:
    """A session imported from pi-autoresearch, as it measured itself."""
    counts = ", ".join(f"{k} {v}" for k, v in i["by_status"].items())
    out = [
        "",
        f"before this session: {i['name']} ({i['format']}, imported from {i['source']})",
        f"  {i['experiments']} runs ({counts}); {i['metric']} "
        f"{_num(i['baseline']['value'], i['unit'])} -> {_num(i['final']['value'], i['unit'])}"
        f" ({_pct(i['cumulative_change_pct'])}) as it measured it, one run per change",
    ]
    out += [
        _shorten(f"  run {w['n']:<4} {_pct(w['change_pct']):>8}  kept: {w['title']}")
        for w in i["wins"]
    ]
    return out
