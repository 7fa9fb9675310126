"""The morning's commands: report, plot, pr, ideas."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from ..errors import UserError
from .common import add_config_options, config_of, doc


def cmd_report(args: argparse.Namespace) -> int:
    """Summarize a journal: counts, baseline vs best, kept wins, what did not work and why."""
    from ..report import render_json, render_markdown, render_text
    from ..report.render import NOT_KEPT_LISTED

    # The text report lists the skipped lines itself.
    listed = None if args.all or args.format == "json" else NOT_KEPT_LISTED
    history, summary, config, templates = _review(args, args.format != "text", listed=listed)
    if args.html:
        from ..report.page import render_page

        Path(args.html).write_text(render_page(history, summary, config, None, templates))
        print(f"wrote {args.html}")
        return 0
    if args.format == "json":
        print(render_json(summary))
    elif args.format == "markdown":
        print(render_markdown(summary, templates), end="")
    else:
        print(render_text(summary), end="")
    return 0


def cmd_plot(args: argparse.Namespace) -> int:
    """Draw progress.png, scales.png when the metric has scales, and sweeps.png when knobs
    were swept."""
    from ..report.plots import plot_progress, plot_scales, plot_sweeps

    history, _, _, _ = _review(args, summarized=False)
    out = Path(args.out)
    for path in (
        plot_progress(history, out / "progress.png"),
        plot_scales(history, out / "scales.png"),
        plot_sweeps(history, out / "sweeps.png"),
    ):
        if path is not None:
            print(f"wrote {path}")
    return 0


def cmd_pr(args: argparse.Namespace) -> int:
    """Write a pull-request description (GitHub Markdown) from a journal."""
    from ..report import render_pr
    from ..report.render import NOT_KEPT_SHOWN

    history, summary, config, templates = _review(args, listed=NOT_KEPT_SHOWN)
    if args.branch:
        history, summary = _branch_review(args, history, config, NOT_KEPT_SHOWN)
    if not summary["kept"]:
        n = summary["experiments"]
        raise UserError(
            f"session '{summary['name']}' kept nothing in {n} experiment{'s' if n != 1 else ''}: "
            "there is no change to describe (`autoresearch report` says what was tried and why "
            "it was not kept)"
        )
    raw = {"baseline": history.baseline_log, "final": history.final_log}
    root = config.repo_path if config is not None else None
    text = render_pr(summary, templates, raw=raw, root=root)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
        print(f"wrote {args.out}")
    else:
        print(text, end="")
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    """Serve the review page on localhost, made afresh when what it shows changed (while a
    night runs it updates itself in place; started before the night, it waits for its
    journal)."""
    from ..report.page import render_page, waiting_page
    from ..report.serve import made_when_changed, serve_page

    def make(inputs: tuple) -> str:
        config = _reviewed_config(args)
        journal = Path(args.journal) if args.journal else config.journal_path
        if not journal.exists():
            return waiting_page(journal, args.refresh)
        history, summary, config, templates = _review(args, warn=False, listed=0)
        running = inputs[0]  # page_inputs' first: the lock, as the key was taken
        inflight = _in_flight(config) if running else None
        live = args.refresh if running else None
        return render_page(history, summary, config, live, templates, inflight)

    # A browser left open on a night asks every --refresh seconds, and a page is a second of
    # CPU (its plots) taken beside the bench: made again only when what it shows changed.
    render = made_when_changed(make, lambda: page_inputs(args))
    render()  # a journal that cannot be reviewed is said now, not at the first request
    serve_page(render, args.host, args.port, lambda line: print(line, flush=True))
    return 0


def page_inputs(args: argparse.Namespace) -> tuple:
    """What the review page is made of: whether a night runs (the session's lock held), the
    repository's branches (which of the branches `finalize` would cut exist), and the files it
    shows (the journal, the config, the templates, the experiment in flight, the profiles), as
    the file system says them."""
    from ..repo.state_dir import SessionLock, session_paths
    from ..report.serve import files_signature

    config = _reviewed_config(args)
    journal = Path(args.journal) if args.journal else config.journal_path
    made_of = [journal, _templates(args, config)]
    running, branches = False, None
    if config is not None:
        paths = session_paths(config)
        running = SessionLock(paths.lock).is_held_elsewhere()
        made_of += [config.path, paths.inflight, paths.profiles]
        branches = _branches(config)
    return running, branches, files_signature(made_of)


def _branches(config) -> str | None:
    """Each branch of the session's repository and its tip; None without a repository."""
    from ..repo.gitrepo import open_repo

    try:
        repo = open_repo(config.repo_path)
    except UserError:
        return None
    return repo.run("for-each-ref", "--format=%(refname) %(objectname)", "refs/heads/").out


def _in_flight(config):
    from ..morning.status import session_status

    return session_status(config)["in_flight"]


def cmd_ideas(args: argparse.Namespace) -> int:
    """Bring ideas.md in step with the journal (kept, retry-worthy, closed axes); add, list."""
    from ..report.ideas import add_idea, backlog, update_ideas

    if args.action in ("add", "list"):
        config = config_of(args)
        path = Path(args.file) if args.file else config.ideas_path
        if args.action == "add":
            if not args.text:
                raise UserError("ideas add needs the idea: autoresearch ideas add 'TEXT'")
            add_idea(path, " ".join(args.text))
            print(f"added to {path}: {' '.join(args.text)}")
        else:
            for line in backlog(path):
                print(line)
        return 0
    if args.text:
        raise UserError(f"unexpected {args.text[0]!r}: ideas [add TEXT | list]")
    _, summary, config, _ = _review(args)
    path = Path(args.file) if args.file else (config.ideas_path if config else Path("ideas.md"))
    before = path.read_text(encoding="utf-8") if path.exists() else None
    from ..agents.outcome import without_holdout_figures

    # The agent's prompt carries ideas.md whole: the hidden holdout's figures stay out of it.
    after = update_ideas(path, without_holdout_figures(summary))
    from ..progress import counted

    if before == after:
        print(f"{path}: already in step with the journal, unchanged")
    else:
        print(
            f"updated {path}: rewrote the journal's section between its marker lines "
            f"({counted(summary['experiments'], 'experiment')}, {len(summary['wins'])} kept); "
            "every other line is as it was. It is a file of your checkout: commit it to keep the "
            "backlog, or "
            f"`git checkout {path.name}` to drop the update"
        )
    return 0


def _branch_review(args: argparse.Namespace, history, config, listed: int | None):
    """The history and summary of the branch `--branch` names (report/branch.py)."""
    from ..report.branch import branch_review

    if config is None:
        raise UserError("pr --branch needs the session's config (the repository it lives in)")
    comparison = args.compare or config.report.comparison or None
    label = args.compare_label or config.report.comparison_label or None
    return branch_review(config, history, args.branch, comparison, label, listed)


def _review(
    args: argparse.Namespace,
    warn: bool = True,
    summarized: bool = True,
    listed: int | None = None,
):
    """The history to review, its summary (None unless `summarized`; `listed`: each not-kept
    group's experiments it names, summarize's) and the config when there is one (pi logs come
    without). Lines skipped as damaged or repeated are said on stderr unless the output says
    them."""
    from ..report import load_history, summarize

    config = _reviewed_config(args)
    journal = Path(args.journal) if args.journal else config.journal_path
    history = load_history(journal, args.session or (config.session.name if config else None))
    for warning in history.warnings if warn else []:
        print(f"warning: {warning}", file=sys.stderr)
    comparison = args.compare or (config.report.comparison if config else "") or None
    label = args.compare_label or (config.report.comparison_label if config else "") or None
    templates = _templates(args, config)
    summary = summarize(history, comparison, label, listed) if summarized else None
    if summary is not None:
        from ..report.profiled import with_profile_moves

        summary = with_profile_moves(summary, config)
    return history, summary, config, templates


def _reviewed_config(args: argparse.Namespace):
    """The session's config; None for a journal named alone without one (a pi log)."""
    from ..errors import ConfigError

    try:
        return config_of(args)
    except ConfigError:
        if args.config or not args.journal:
            raise
        return None


def _templates(args: argparse.Namespace, config) -> Path | None:
    """The templates overriding the built-in ones: --templates, else the config's."""
    if args.templates:
        return Path(args.templates)
    if config is not None and config.report.templates:
        return Path(config.resolve(config.report.templates))
    return None


def _add_review(parser: argparse.ArgumentParser) -> None:
    add_config_options(parser)
    parser.add_argument(
        "--journal",
        metavar="PATH",
        help="the journal to read (default: the config's); pi-autoresearch logs work too",
    )
    parser.add_argument("--compare", metavar="ENGINE", help="comparison engine, e.g. sqlite")
    parser.add_argument("--compare-label", metavar="NAME", help="its name in tables, e.g. SQLite")
    parser.add_argument("--templates", metavar="DIR", help="templates overriding the built-in ones")


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "report": cmd_report,
    "plot": cmd_plot,
    "pr": cmd_pr,
    "ideas": cmd_ideas,
    "serve": cmd_serve,
}


def add_parsers(sub) -> None:
    """This group's subcommands, in the order `--help` lists them."""
    report = sub.add_parser("report", help=doc(cmd_report), description=doc(cmd_report))
    _add_review(report)
    report.add_argument("--format", choices=["text", "markdown", "json"], default="text")
    report.add_argument(
        "--all",
        action="store_true",
        help="list every experiment not kept, not each group's latest 30 (json lists every one)",
    )
    report.add_argument(
        "--html",
        nargs="?",
        const="report.html",
        metavar="FILE",
        help="write the review as one self-contained HTML page instead (default: report.html): "
        "plots, every experiment with its evidence, filters, the branches finalize would cut",
    )

    plot = sub.add_parser("plot", help=doc(cmd_plot), description=doc(cmd_plot))
    _add_review(plot)
    plot.add_argument("--out", default=".", metavar="DIR", help="where the PNGs go (default: .)")

    pr = sub.add_parser("pr", help=doc(cmd_pr), description=doc(cmd_pr))
    _add_review(pr)
    pr.add_argument("--out", metavar="FILE", help="write here instead of to stdout")
    pr.add_argument(
        "--branch",
        metavar="NAME",
        help="describe one branch `finalize` cut: its keeps, its own confirmation, what did "
        "not work in its files",
    )

    serve = sub.add_parser("serve", help=doc(cmd_serve), description=doc(cmd_serve))
    _add_review(serve)
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1)")
    serve.add_argument(
        "--port", type=int, default=8765, help="port (default: 8765; 0: any free one)"
    )
    serve.add_argument(
        "--refresh",
        type=int,
        default=15,
        metavar="S",
        help="while a night runs (or before its journal exists), the page updates itself "
        "every S seconds, in place (default: 15)",
    )

    ideas = sub.add_parser("ideas", help=doc(cmd_ideas), description=doc(cmd_ideas))
    _add_review(ideas)
    ideas.add_argument(
        "action",
        nargs="?",
        choices=["sync", "add", "list"],
        default="sync",
        help="sync (default): rewrite the journal's section; add TEXT: append an idea to the "
        "backlog; list: print the backlog",
    )
    ideas.add_argument("text", nargs="*", help="the idea, for add")
    ideas.add_argument("--file", metavar="PATH", help="the ideas file (default: the config's)")
