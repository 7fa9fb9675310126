"""The command line: parse arguments, load the config, call the library. Nothing else lives here."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path

from .config import Config, check_session_name, find_config, load_config
from .errors import UserError
from .journal.records import EXIT_CODES
from .loop.signals import install_stop_handlers

__all__ = ["EXIT_FAILED", "EXIT_USER_ERROR", "TRACEBACK_ENV", "build_parser", "main"]

EXIT_USER_ERROR = 1
EXIT_FAILED = 3  # the command ran, but what it ran did not end well (e.g. interrupted)
TRACEBACK_ENV = "AUTORESEARCH_TRACEBACK"
LONG_RUNNING = (
    "run",
    "confirm",
    "try",
)  # a signal asks them for a clean stop, from the first moment


def _config(args: argparse.Namespace) -> Config:
    path = Path(args.config) if args.config else find_config(Path.cwd())
    config = load_config(path)
    if getattr(args, "session", None):
        config = dataclasses.replace(
            config,
            session=dataclasses.replace(
                config.session, name=check_session_name(args.session, "--session")
            ),
        )
    return config


def cmd_run(args: argparse.Namespace) -> int:
    """Run the experiment loop on the session in the config (resumes where it stopped)."""
    from .loop.driver import run_session
    from .loop.session import RunOptions
    from .progress import Progress

    options = RunOptions(
        max_experiments=args.max_experiments,
        max_hours=args.max_hours,
        stop_after_no_keep=args.stop_after_no_keep,
        confirm=False if args.no_confirm else None,
        env=dict(args.env),
        accept_noise=args.accept_noise,
    )
    config = _config(args)
    scheduler = args.cluster if args.cluster is not None else config.cluster.scheduler
    if scheduler:
        from .cluster import run_cluster_session
        from .config import check_scheduler

        check_scheduler(scheduler, "--cluster")
        outcome = run_cluster_session(config, scheduler, options, Progress(quiet=args.quiet))
    else:
        outcome = run_session(config, options, Progress(quiet=args.quiet))
    print(
        f"session {outcome.session}: {outcome.ran} experiments this run, {outcome.kept} kept; "
        f"stopped: {outcome.stop_reason}"
    )
    if outcome.confirmed_change_pct is not None:
        print(f"confirmed change from the session's baseline: {outcome.confirmed_change_pct:+.2f}%")
    return EXIT_FAILED if outcome.interrupted else 0


def cmd_check(args: argparse.Namespace) -> int:
    """Pre-flight: build, bench once and run the checks on the session's best; list every metric."""
    from .loop.preflight import check_repository

    config = _config(args)
    result = check_repository(config, dict(args.env), lambda line: print(line, file=sys.stderr))
    if result.interrupted:
        return EXIT_FAILED
    for line in result.lines(config):
        print(line)
    for problem in result.problems:
        print(f"problem: {problem}")
    if result.ok:
        print("ready: every configured metric printed, the checks pass on the unmodified code")
    return 0 if result.ok else 1


def cmd_confirm(args: argparse.Namespace) -> int:
    """Measure the session's baseline against its final tip, alternating, and journal it."""
    from .loop.confirm import confirm
    from .loop.session import RunOptions
    from .progress import Progress

    record = confirm(
        _config(args), RunOptions(env=dict(args.env)), Progress(quiet=args.quiet), args.runs
    )
    if record is None:
        print("confirmation interrupted")
        return EXIT_FAILED
    if record.change_pct is None:
        print(f"confirmation: {record.metric} could not be compared")
        return EXIT_FAILED
    print(
        f"confirmed: {record.metric} {record.change_pct:+.2f}% "
        f"(95% CI [{record.ci_low_pct:+.2f}%, {record.ci_high_pct:+.2f}%], "
        f"p={record.p_value:.2g}, {record.runs_per_arm} runs each)"
    )
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    """Show where a session stands: experiments by status, baseline vs best, the one in flight."""
    from .loop.status import format_status, session_status

    status = session_status(_config(args))
    print(json.dumps(status, indent=2) if args.json else format_status(status))
    return 0


def cmd_try(args: argparse.Namespace) -> int:
    """Judge a change an agent made, as one experiment of the session; the outcome as JSON."""
    from .agents.tries import outcome, try_change
    from .loop.session import RunOptions
    from .progress import Progress

    if args.patch and args.worktree:
        raise UserError("give --patch FILE or --worktree DIR, not both")
    config = _config(args)
    if args.detach:
        from .agents.tries import start_detached

        forwarded = [a for a in (argv_of_try(args)) if a != "--detach"]
        print(json.dumps(start_detached(config, forwarded, Path.cwd()), indent=2))
        return 0
    record = try_change(
        config,
        patch_file=Path(args.patch) if args.patch else None,
        worktree=Path(args.worktree) if args.worktree else None,
        fields={
            "title": args.title,
            "hypothesis": args.hypothesis,
            "mechanism": args.mechanism,
            "expected_effect": args.expected_effect,
            "family": args.family,
        },
        options=RunOptions(env=dict(args.env), accept_noise=True),
        progress=Progress(quiet=args.quiet),
    )
    result = outcome(record, config)
    print(json.dumps(result, indent=2))
    return result["exit_code"]


def argv_of_try(args: argparse.Namespace) -> list[str]:
    """The try's own options, for the background process that runs it (paths made absolute)."""
    forwarded = ["--quiet"]
    for flag, value in (
        ("--patch", args.patch and str(Path(args.patch).resolve())),
        ("--worktree", args.worktree and str(Path(args.worktree).resolve())),
        ("--title", args.title),
        ("--hypothesis", args.hypothesis),
        ("--mechanism", args.mechanism),
        ("--expected-effect", args.expected_effect),
        ("--family", args.family),
    ):
        if value:
            forwarded += [flag, value]
    for key, value in args.env:
        forwarded += ["--env", f"{key}={value}"]
    return forwarded


def cmd_result(args: argparse.Namespace) -> int:
    """The outcome of a try started with --detach (waits with --wait SECONDS)."""
    from .agents.tries import read_result

    result = read_result(_config(args), args.id, args.wait)
    print(json.dumps(result, indent=2))
    if result["status"] == "running":
        return 0
    return result.get("exit_code", EXIT_USER_ERROR)


def cmd_mcp(args: argparse.Namespace) -> int:
    """Serve the session to an agent over MCP (stdio): state, history, ideas, try, report."""
    from .agents.mcp_server import serve

    serve(_config(args))
    return 0


def cmd_state(args: argparse.Namespace) -> int:
    """Where the session stands, for an agent: baseline, best, noise, threshold, budget left."""
    from .loop.status import session_status

    print(json.dumps(session_status(_config(args)), indent=2))
    return 0


def cmd_history(args: argparse.Namespace) -> int:
    """The session's last experiments, compact, with their evidence and ASI."""
    from .agents.tries import history_rows

    rows = history_rows(_config(args), args.last)
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    for row in rows:
        change = f"{row['change_pct']:+.1f}%" if row["change_pct"] is not None else "n/a"
        why = row["reason"] or ""
        print(f"#{row['n']:<4} {row['status']:<15} {change:>8}  {row['title']}: {why}"[:200])
    return 0


def cmd_retry(args: argparse.Namespace) -> int:
    """Queue experiments to be measured again on the next run (any status)."""
    from .journal.store import Journal
    from .loop.second_look import request_retries
    from .loop.session import session_paths

    config = _config(args)
    known = {r.id: r for r in Journal(config.journal_path, config.session.name).read().experiments}
    missing = [i for i in args.ids if i not in known]
    if missing:
        raise UserError(
            f"no experiment {', '.join(missing)} in session '{config.session.name}' of "
            f"{config.journal_path} (ids look like {config.session.name}-0003)"
        )
    queued = request_retries(session_paths(config), args.ids)
    for exp_id in args.ids:
        print(f"queued {exp_id} ({known[exp_id].title!r}, was {known[exp_id].status})")
    print(f"{len(queued)} experiment(s) will be measured again when the queue is empty")
    return 0


def cmd_prune(args: argparse.Namespace) -> int:
    """Remove old bench logs: keep those of kept and of the last N experiments."""
    from .journal.store import Journal
    from .loop.retention import prune_logs
    from .loop.session import session_paths

    config = _config(args)
    keep = args.keep if args.keep is not None else config.session.keep_logs
    if keep < 0:
        raise UserError(f"--keep must be >= 0, got {keep}")
    if args.keep is None and keep == 0:
        print("session.keep_logs = 0 keeps every log; pass --keep N to prune anyway")
        return 0
    history = Journal(config.journal_path, config.session.name).read()
    result = prune_logs(session_paths(config), history, keep, dry_run=args.dry_run)
    verb = "would remove" if args.dry_run else "removed"
    for path in result.removed:
        print(f"{verb} {path}")
    print(
        f"{verb} {len(result.removed)} log directories ({result.freed_bytes / 1e6:.1f} MB); "
        f"kept {result.kept}"
    )
    return 0


def cmd_sessions(args: argparse.Namespace) -> int:
    """List the repository's sessions: branch, experiments, state size, last activity."""
    from .loop.sessions import format_sessions, list_sessions

    config = _config(args)
    print(format_sessions(list_sessions(config), config.session.name))
    return 0


def cmd_clean(args: argparse.Namespace) -> int:
    """Remove a session's worktrees and state (logs, patches); its branch only with --branch."""
    from .loop.sessions import clean_session

    config = _config(args)
    name = check_session_name(args.name, "SESSION")
    config = dataclasses.replace(config, session=dataclasses.replace(config.session, name=name))
    for line in clean_session(config, delete_branch=args.branch):
        print(line)
    return 0


def cmd_init(args: argparse.Namespace) -> int:
    """Scaffold a session in a repository: config, bench and checks scripts, ideas file; or,
    with --from-pi, turn a pi-autoresearch session into one whose journal holds its runs."""
    from .init.scaffold import scaffold

    directory = Path(args.directory).resolve()
    if args.from_pi is not None:
        from .init.pi_import import import_pi

        lines = import_pi(
            directory,
            log=Path(args.from_pi) if args.from_pi else None,
            session=args.session,
            metric=args.metric,
            direction=args.direction,
            unit=args.unit,
            scope=args.scope,
            force=args.force,
        )
        print("\n".join(lines))
        return 0
    written = scaffold(
        directory,
        session=args.session,
        metric=args.metric or "bench_ms",
        direction=args.direction or "lower",
        unit=args.unit if args.unit is not None else "ms",
        scope=args.scope or ["src/**"],
        force=args.force,
    )
    for path in written:
        print(f"wrote {path.relative_to(directory)}")
    print(
        "next: edit autoresearch.sh to print your METRIC lines, set [scope] in "
        "autoresearch.toml, commit the scripts, put patches in hypotheses/, then `autoresearch run`"
    )
    return 0


def _review(args: argparse.Namespace, warn: bool = True):
    """The history to review, and the config when there is one (pi logs come without).
    Lines skipped as damaged or repeated are said on stderr unless the output says them."""
    from .errors import ConfigError
    from .report import load_history, summarize

    config = None
    try:
        config = _config(args)
    except ConfigError:
        if args.config or not args.journal:
            raise
    journal = Path(args.journal) if args.journal else config.journal_path
    history = load_history(journal, args.session or (config.session.name if config else None))
    for warning in history.warnings if warn else []:
        print(f"warning: {warning}", file=sys.stderr)
    comparison = args.compare or (config.report.comparison if config else "") or None
    label = args.compare_label or (config.report.comparison_label if config else "") or None
    templates = args.templates or (
        str(config.resolve(config.report.templates)) if config and config.report.templates else None
    )
    summary = summarize(history, comparison, label)
    return history, summary, config, Path(templates) if templates else None


def cmd_report(args: argparse.Namespace) -> int:
    """Summarize a journal: counts, baseline vs best, kept wins, what did not work and why."""
    from .report import render_json, render_markdown, render_text

    # The text report lists the skipped lines itself.
    _, summary, _, templates = _review(args, warn=args.format != "text")
    if args.format == "json":
        print(render_json(summary))
    elif args.format == "markdown":
        print(render_markdown(summary, templates), end="")
    else:
        print(render_text(summary), end="")
    return 0


def cmd_plot(args: argparse.Namespace) -> int:
    """Draw progress.png, scales.png and, when knobs were swept, sweeps.png."""
    from .report.plots import plot_progress, plot_scales, plot_sweeps

    history, _, _, _ = _review(args)
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
    from .report import render_pr

    history, summary, _, templates = _review(args)
    text = render_pr(
        summary, templates, raw={"baseline": history.baseline_log, "final": history.final_log}
    )
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
        print(f"wrote {args.out}")
    else:
        print(text, end="")
    return 0


def cmd_ideas(args: argparse.Namespace) -> int:
    """Bring ideas.md in step with the journal (kept, retry-worthy, closed axes); add, list."""
    from .report.ideas import add_idea, backlog, update_ideas

    if args.action in ("add", "list"):
        config = _config(args)
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
    after = update_ideas(path, summary)
    if before == after:
        print(f"{path}: already in step with the journal, unchanged")
    else:
        print(
            f"updated {path}: rewrote the journal's section between its marker lines "
            f"({summary['experiments']} experiments, {len(summary['wins'])} kept); every other "
            "line is as it was. It is a file of your checkout: commit it to keep the backlog, or "
            f"`git checkout {path.name}` to drop the update"
        )
    return 0


def _add_review(parser: argparse.ArgumentParser) -> None:
    _add_config(parser)
    parser.add_argument(
        "--journal",
        metavar="PATH",
        help="the journal to read (default: the config's); pi-autoresearch logs work too",
    )
    parser.add_argument("--compare", metavar="ENGINE", help="comparison engine, e.g. sqlite")
    parser.add_argument("--compare-label", metavar="NAME", help="its name in tables, e.g. SQLite")
    parser.add_argument("--templates", metavar="DIR", help="templates overriding the built-in ones")


def _key_value(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got '{text}'")
    return key, value


def _add_config(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--config",
        metavar="PATH",
        help="session config (default: ./autoresearch.toml, or [tool.autoresearch] in "
        "./pyproject.toml)",
    )
    parser.add_argument(
        "--session",
        metavar="NAME",
        help="session name, overriding [session] name: a new name starts a new session",
    )


def _add_env(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--env",
        type=_key_value,
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="environment for the bench and checks (repeatable)",
    )


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "run": cmd_run,
    "check": cmd_check,
    "confirm": cmd_confirm,
    "status": cmd_status,
    "init": cmd_init,
    "prune": cmd_prune,
    "sessions": cmd_sessions,
    "clean": cmd_clean,
    "retry": cmd_retry,
    "try": cmd_try,
    "state": cmd_state,
    "history": cmd_history,
    "result": cmd_result,
    "mcp": cmd_mcp,
    "report": cmd_report,
    "plot": cmd_plot,
    "pr": cmd_pr,
    "ideas": cmd_ideas,
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="autoresearch",
        description="Unattended performance-optimization loops: apply a hypothesis, measure it, "
        "keep it or revert it, and journal why.",
        epilog=f"Set {TRACEBACK_ENV}=1 to see the traceback behind an error.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    run = sub.add_parser("run", help=_doc(cmd_run), description=_doc(cmd_run))
    _add_config(run)
    run.add_argument("--max-experiments", type=int, metavar="N", help="override budget")
    run.add_argument("--max-hours", type=float, metavar="H", help="override budget (this run)")
    run.add_argument(
        "--stop-after-no-keep",
        type=int,
        metavar="N",
        help="stop after N experiments without a keep",
    )
    _add_env(run)
    run.add_argument("--quiet", action="store_true", help="no progress lines")
    run.add_argument(
        "--no-confirm", action="store_true", help="skip the confirmation at the end of the run"
    )
    run.add_argument(
        "--accept-noise",
        action="store_true",
        help="go on when the calibration says the bench is too noisy for the effect asked",
    )
    run.add_argument(
        "--cluster",
        metavar="ADDRESS",
        help="measure on the bench hosts of this Dask scheduler (tcp://host:8786), or on N "
        "local workers (local:N); overrides [cluster] scheduler, '' runs here",
    )

    check = sub.add_parser("check", help=_doc(cmd_check), description=_doc(cmd_check))
    _add_config(check)
    _add_env(check)

    sessions = sub.add_parser("sessions", help=_doc(cmd_sessions), description=_doc(cmd_sessions))
    _add_config(sessions)

    clean = sub.add_parser("clean", help=_doc(cmd_clean), description=_doc(cmd_clean))
    clean.add_argument("name", metavar="SESSION", help="the session to remove")
    clean.add_argument("--config", metavar="PATH", help="session config (for the repository)")
    clean.add_argument(
        "--branch", action="store_true", help="delete the session branch too (its kept commits)"
    )

    confirm = sub.add_parser("confirm", help=_doc(cmd_confirm), description=_doc(cmd_confirm))
    _add_config(confirm)
    confirm.add_argument(
        "--runs", type=int, metavar="N", help="runs per arm (default: decision.confirm_runs)"
    )
    _add_env(confirm)
    confirm.add_argument("--quiet", action="store_true", help="no progress lines")

    status = sub.add_parser("status", help=_doc(cmd_status), description=_doc(cmd_status))
    _add_config(status)
    status.add_argument("--json", action="store_true", help="machine-readable output")

    attempt = sub.add_parser(
        "try",
        help=_doc(cmd_try),
        description=_doc(cmd_try)
        + " Exit codes: "
        + ", ".join(f"{code} {status}" for status, code in EXIT_CODES.items())
        + "; 1 an error (a held session lock, a bad patch file).",
    )
    _add_config(attempt)
    attempt.add_argument("--patch", metavar="FILE", help="the change as a patch file")
    attempt.add_argument(
        "--worktree",
        metavar="DIR",
        help="the change as the state of this worktree against the session's best "
        "(default: the current directory); read once, at the start",
    )
    attempt.add_argument("--title", help="what the change does (or a Title: line in the patch)")
    attempt.add_argument("--hypothesis", help="why it should move the metric")
    attempt.add_argument("--mechanism", help="what makes it faster")
    attempt.add_argument("--expected-effect", help='e.g. "-10%% bench_ms"')
    attempt.add_argument("--family", help="the axis it explores (a short label)")
    _add_env(attempt)
    attempt.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    attempt.add_argument(
        "--detach",
        action="store_true",
        help="start it in the background and print its id at once; `autoresearch result ID` "
        "reads the outcome",
    )

    result = sub.add_parser("result", help=_doc(cmd_result), description=_doc(cmd_result))
    _add_config(result)
    result.add_argument("id", help="the id `try --detach` printed")
    result.add_argument(
        "--wait", type=float, default=0.0, metavar="SECONDS", help="wait up to this long"
    )

    mcp = sub.add_parser("mcp", help=_doc(cmd_mcp), description=_doc(cmd_mcp))
    _add_config(mcp)

    state = sub.add_parser("state", help=_doc(cmd_state), description=_doc(cmd_state))
    _add_config(state)
    state.add_argument("--json", action="store_true", help="JSON (the only format; for symmetry)")

    history = sub.add_parser("history", help=_doc(cmd_history), description=_doc(cmd_history))
    _add_config(history)
    history.add_argument("--last", type=int, default=10, metavar="N", help="0: all (default 10)")
    history.add_argument("--json", action="store_true", help="machine-readable output")

    retry = sub.add_parser("retry", help=_doc(cmd_retry), description=_doc(cmd_retry))
    _add_config(retry)
    retry.add_argument("ids", nargs="+", metavar="ID", help="experiment ids, e.g. main-0003")

    prune = sub.add_parser("prune", help=_doc(cmd_prune), description=_doc(cmd_prune))
    _add_config(prune)
    prune.add_argument(
        "--keep",
        type=int,
        metavar="N",
        help="keep the logs of the last N experiments (default: session.keep_logs; 0 keeps "
        "only those of kept experiments, the first and last calibration, the last confirmation)",
    )
    prune.add_argument("--dry-run", action="store_true", help="list what would be removed")

    init = sub.add_parser("init", help=_doc(cmd_init), description=_doc(cmd_init))
    init.add_argument("directory", nargs="?", default=".", help="the repository (default: .)")
    init.add_argument("--session", default="main", help="session name (default: main)")
    init.add_argument(
        "--metric", help="primary metric name (default: bench_ms, or the pi session's)"
    )
    init.add_argument(
        "--direction", choices=["lower", "higher"], help="default: lower, or the pi session's"
    )
    init.add_argument("--unit", help="primary metric unit (default: ms, or the pi session's)")
    init.add_argument(
        "--scope", action="append", metavar="GLOB", help="what patches may touch (repeatable)"
    )
    init.add_argument("--force", action="store_true", help="overwrite existing files")
    init.add_argument(
        "--from-pi",
        nargs="?",
        const="",
        metavar="LOG",
        help="import a pi-autoresearch session: its bench and checks scripts, ideas and log "
        "(autoresearch.jsonl or .auto/log.jsonl, found in DIRECTORY unless LOG names it) "
        "become this session's, its runs the journal's history",
    )

    report = sub.add_parser("report", help=_doc(cmd_report), description=_doc(cmd_report))
    _add_review(report)
    report.add_argument("--format", choices=["text", "markdown", "json"], default="text")

    plot = sub.add_parser("plot", help=_doc(cmd_plot), description=_doc(cmd_plot))
    _add_review(plot)
    plot.add_argument("--out", default=".", metavar="DIR", help="where the PNGs go (default: .)")

    pr = sub.add_parser("pr", help=_doc(cmd_pr), description=_doc(cmd_pr))
    _add_review(pr)
    pr.add_argument("--out", metavar="FILE", help="write here instead of to stdout")

    ideas = sub.add_parser("ideas", help=_doc(cmd_ideas), description=_doc(cmd_ideas))
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
    return parser


def _doc(func: Callable) -> str:
    return (func.__doc__ or "").strip().splitlines()[0]


def main(argv: Sequence[str] | None = None) -> int:
    """The console script: one place where a UserError becomes `error: ...` and exit 1."""
    args = build_parser().parse_args(argv)
    if args.command in LONG_RUNNING:
        install_stop_handlers()
    try:
        return COMMANDS[args.command](args)
    except UserError as exc:
        if os.environ.get(TRACEBACK_ENV):
            traceback.print_exc()
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USER_ERROR
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
