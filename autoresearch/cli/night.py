"""The session's commands: run it, check it, confirm it, see where it stands, tidy it."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections.abc import Callable

from ..config import check_session_name
from ..errors import UserError
from .common import EXIT_FAILED, add_config_options, add_env_option, config_of, doc


def cmd_run(args: argparse.Namespace) -> int:
    """Run the experiment loop on the session in the config (resumes where it stopped)."""
    from ..loop.driver import run_session
    from ..loop.session import RunOptions
    from ..progress import Progress, counted

    options = RunOptions(
        max_experiments=args.max_experiments,
        max_hours=args.max_hours,
        stop_after_no_keep=args.stop_after_no_keep,
        confirm=False if args.no_confirm else None,
        env=dict(args.env),
        accept_noise=args.accept_noise,
    )
    config = config_of(args)
    progress = Progress(quiet=args.quiet)
    scheduler = args.cluster if args.cluster is not None else config.cluster.scheduler
    if scheduler:
        from ..cluster import bench_hosts
        from ..config_checks import check_scheduler

        check_scheduler(scheduler, "--cluster")
        with bench_hosts(config, scheduler, progress) as hosts:
            outcome = run_session(config, options, progress, executor=hosts)
    else:
        outcome = run_session(config, options, progress)
    print(
        f"session {outcome.session}: {counted(outcome.ran, 'experiment')} this run, "
        f"{outcome.kept} kept; "
        f"stopped: {outcome.stop_reason}"
    )
    if outcome.confirmed_change_pct is not None:
        print(f"confirmed change from the session's baseline: {outcome.confirmed_change_pct:+.2f}%")
    return EXIT_FAILED if outcome.interrupted else 0


def cmd_check(args: argparse.Namespace) -> int:
    """Pre-flight: build, bench once, checks and calibration on the session's best.

    Lists every metric, then calibrates as `run` does and says what a night could detect (or
    why `run` would refuse it)."""
    from ..loop.preflight import check_repository

    config = config_of(args)
    result = check_repository(
        config,
        dict(args.env),
        lambda line: print(line, file=sys.stderr),
        calibrate_noise=not args.no_calibrate,
    )
    if result.interrupted:
        return EXIT_FAILED
    for line in result.lines(config):
        print(line)
    for problem in result.problems:
        print(f"problem: {problem}")
    if result.ok:
        print(
            "ready: every configured metric printed, the checks pass on the unmodified code"
            + ("" if result.noise is None else f", {result.noise.detectable_pct:.1f}% detectable")
        )
    return 0 if result.ok else 1


def cmd_finalize(args: argparse.Namespace) -> int:
    """Regroup the session's kept commits into independent local branches from its base.

    Commits that share a file go together; the branches' union is checked equal to the
    session's tip; nothing is pushed."""
    from ..morning.finalize import finalize

    config = config_of(args)
    if args.contributions:
        return _contributions(args, config)
    if args.open_prs:
        from ..report.publish import require_gh

        require_gh()
    drop = tuple(args.drop or ())
    done = finalize(config, args.prefix, dry_run=args.dry_run, force=args.force, drop=drop)
    commits = sum(len(g.commits) for g in done.groups)
    print(
        f"{config.session.name}: {commits} kept commit{'s' if commits != 1 else ''} from base "
        f"{done.base[:10]} to tip {done.tip[:10]}, in {len(done.groups)} independent "
        f"group{'s' if len(done.groups) != 1 else ''}"
    )
    for group in done.groups:
        together = (
            f"; together: they share {', '.join(group.shared)}" if len(group.commits) > 1 else ""
        )
        count = f"{len(group.commits)} commit{'s' if len(group.commits) != 1 else ''}"
        print(f"  {group.branch}  {group.tip[:10]}  ({count}{together})")
        for kept in group.commits:
            which = f"#{kept.n}" if kept.n is not None else kept.commit[:10]
            change = f" ({kept.change_pct:+.1f}%)" if kept.change_pct is not None else ""
            print(f"    {which} {kept.title}{change}: {', '.join(kept.files)}")
    for kept in done.dropped:
        print(f"  left out: #{kept.n} {kept.title}: {', '.join(kept.files)}")
    without_them = "".join(f" without #{k.n}" for k in done.dropped)
    print(
        f"the branches together equal the session's tip{without_them}: "
        + ("yes" if done.union_equals_tip else f"NO, they differ in {', '.join(done.differing)}")
    )
    if not done.written:
        print("dry run: no branch written")
        return 0 if done.union_equals_tip else 1
    pushed = "pushed with --open-prs below" if args.open_prs else "nothing pushed"
    fresh = len(done.groups) - len(done.unchanged)
    if fresh:
        print(f"wrote {fresh} local branch{'es' if fresh != 1 else ''}; {pushed}")
    if done.unchanged:
        print(
            f"{len(done.unchanged)} branch{'es' if len(done.unchanged) != 1 else ''} already "
            f"held the same commit{'s' if len(done.unchanged) != 1 else ''}: unchanged"
        )
    code = _confirm_branches(args, config, done) if args.confirm else 0
    if code == 0 and args.open_prs:
        from ..report.publish import open_pull_requests

        open_pull_requests(config, done, args.remote, args.into, print)
    return code


def _contributions(args: argparse.Namespace, config) -> int:
    """Each keep taken out of the tip and measured against it: what it adds now."""
    from ..loop.contributions import contributions
    from ..progress import Progress

    found = contributions(config, args.runs, dict(args.env), Progress(quiet=args.quiet))
    print(
        f"{config.session.name}: what each keep adds to the tip (the tip without it, against "
        "the tip, side by side)"
    )
    dead = []
    for c in found:
        verdict = c.verdict(config.metric.direction)
        r = c.record
        measured = (
            f"{r.change_pct:+.2f}% (95% CI {r.ci_low_pct:+.2f}% to {r.ci_high_pct:+.2f}%, "
            f"{r.runs_per_arm} pairs): "
            if r is not None and r.change_pct is not None
            else ""
        )
        print(f"  #{c.kept.n} {c.kept.title}: {measured}{verdict}")
        if verdict in ("dead weight", "costs"):
            dead.append(c.kept.n)
    if any(c.record is None and c.why_not is None for c in found):
        return EXIT_FAILED  # interrupted
    if dead:
        drops = " ".join(f"--drop {n}" for n in dead)
        print(f"`autoresearch finalize {drops} --confirm` cuts the branches without them")
    return 0


def _confirm_branches(args: argparse.Namespace, config, done) -> int:
    """Each branch against the base, said with whether it stands alone."""
    from ..loop.contributions import confirm_branches
    from ..morning.finalize import stands_alone
    from ..progress import Progress

    confirm_branches(config, done, args.runs, dict(args.env), Progress(quiet=args.quiet))
    for branch, record in done.confirmations.items():
        if record is None:
            print(f"{branch}: interrupted before its confirmation ended")
            return EXIT_FAILED
        alone = stands_alone(record, config.metric.direction)
        print(
            f"{branch}: {record.change_pct:+.2f}% "
            f"(95% CI {record.ci_low_pct:+.2f}% to {record.ci_high_pct:+.2f}%, "
            f"{record.runs_per_arm} pairs against the base)"
            + (
                ""
                if alone
                else "; not a win on its own: its keeps gained on top of the other branches' "
                "changes, so it goes in with them or after them"
            )
        )
    return 0


def cmd_confirm(args: argparse.Namespace) -> int:
    """Measure the session's baseline against its final tip, alternating, and journal it."""
    from ..loop.driver import confirm
    from ..loop.session import RunOptions
    from ..progress import Progress

    record = confirm(
        config_of(args), RunOptions(env=dict(args.env)), Progress(quiet=args.quiet), args.runs
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
    from ..morning.status import format_status, session_status

    status = session_status(config_of(args))
    print(json.dumps(status, indent=2) if args.json else format_status(status))
    return 0


def cmd_retry(args: argparse.Namespace) -> int:
    """Queue experiments to be measured again on the next run (any status)."""
    from ..journal.store import Journal
    from ..loop.second_look import request_retries
    from ..repo.state_dir import session_paths

    config = config_of(args)
    journal = Journal(config.journal_path, config.session.name)
    known = {a.id: a for a in journal.digest().attempts or []}
    missing = [i for i in args.ids if i not in known]
    if missing:
        raise UserError(
            f"no experiment {', '.join(missing)} in session '{config.session.name}' of "
            f"{config.journal_path} (ids look like {config.session.name}-0003)"
        )
    queued = request_retries(session_paths(config), args.ids)
    for exp_id in args.ids:
        record = journal.record(known[exp_id])
        title = record.title if record is not None else "?"
        print(f"queued {exp_id} ({title!r}, was {known[exp_id].status})")
    print(f"{len(queued)} experiment(s) will be measured again when the queue is empty")
    return 0


def cmd_prune(args: argparse.Namespace) -> int:
    """Remove old bench logs: keep those of kept and of the last N experiments."""
    from ..journal.store import Journal
    from ..loop.retention import prune_logs
    from ..repo.state_dir import session_paths

    config = config_of(args)
    keep = args.keep if args.keep is not None else config.session.keep_logs
    if keep < 0:
        raise UserError(f"--keep must be >= 0, got {keep}")
    if args.keep is None and keep == 0:
        print("session.keep_logs = 0 keeps every log; pass --keep N to prune anyway")
        return 0
    journal = Journal(config.journal_path, config.session.name)
    result = prune_logs(session_paths(config), journal, keep, dry_run=args.dry_run)
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
    from ..morning.sessions import format_sessions, list_sessions

    config = config_of(args)
    print(format_sessions(list_sessions(config), config.session.name))
    return 0


def cmd_clean(args: argparse.Namespace) -> int:
    """Remove a session's worktrees and state (logs, patches); its branch only with --branch."""
    from ..morning.sessions import clean_session

    config = config_of(args)
    name = check_session_name(args.name, "SESSION")
    config = dataclasses.replace(config, session=dataclasses.replace(config.session, name=name))
    for line in clean_session(config, delete_branch=args.branch):
        print(line)
    return 0


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "run": cmd_run,
    "check": cmd_check,
    "finalize": cmd_finalize,
    "confirm": cmd_confirm,
    "status": cmd_status,
    "retry": cmd_retry,
    "prune": cmd_prune,
    "sessions": cmd_sessions,
    "clean": cmd_clean,
}


def add_parsers(sub) -> None:
    """This group's subcommands, in the order `--help` lists them."""
    _add_loop_parsers(sub)
    _add_housekeeping_parsers(sub)


def _add_loop_parsers(sub) -> None:
    run = sub.add_parser("run", help=doc(cmd_run), description=doc(cmd_run))
    add_config_options(run)
    run.add_argument("--max-experiments", type=int, metavar="N", help="override budget")
    run.add_argument("--max-hours", type=float, metavar="H", help="override budget (this run)")
    run.add_argument(
        "--stop-after-no-keep",
        type=int,
        metavar="N",
        help="stop after N experiments without a keep",
    )
    add_env_option(run)
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

    check = sub.add_parser("check", help=doc(cmd_check), description=doc(cmd_check))
    add_config_options(check)
    add_env_option(check)
    check.add_argument(
        "--no-calibrate",
        action="store_true",
        help="skip the calibration (bench.calibration_runs runs) and its noise verdict",
    )

    confirm = sub.add_parser("confirm", help=doc(cmd_confirm), description=doc(cmd_confirm))
    add_config_options(confirm)
    confirm.add_argument(
        "--runs", type=int, metavar="N", help="runs per arm (default: decision.confirm_runs)"
    )
    add_env_option(confirm)
    confirm.add_argument("--quiet", action="store_true", help="no progress lines")

    status = sub.add_parser("status", help=doc(cmd_status), description=doc(cmd_status))
    add_config_options(status)
    status.add_argument("--json", action="store_true", help="machine-readable output")


def _add_finalize_parser(sub) -> None:
    final = sub.add_parser("finalize", help=doc(cmd_finalize), description=doc(cmd_finalize))
    add_config_options(final)
    final.add_argument(
        "--prefix",
        metavar="P",
        help="branch names start with this (default: the session branch and a dash, "
        "autoresearch/NAME-01-...)",
    )
    final.add_argument(
        "--dry-run", action="store_true", help="show the groups and the check; write nothing"
    )
    final.add_argument("--force", action="store_true", help="overwrite branches of the same names")
    final.add_argument(
        "--confirm",
        action="store_true",
        help="measure each branch against the base, side by side, and journal it",
    )
    final.add_argument(
        "--contributions",
        action="store_true",
        help="measure what each keep adds to the tip (the tip without it, against the tip) "
        "and flag dead weight; writes no branch",
    )
    final.add_argument(
        "--drop",
        type=int,
        action="append",
        metavar="N",
        help="leave experiment N's keep out of every branch (dead weight); repeatable",
    )
    final.add_argument(
        "--runs", type=int, metavar="N", help="runs per arm (default: decision.confirm_runs)"
    )
    final.add_argument(
        "--open-prs",
        action="store_true",
        help="push each branch to --remote and open its pull request with the GitHub CLI "
        "(gh pr create), described as `pr --branch` describes it",
    )
    final.add_argument(
        "--remote", default="origin", help="where --open-prs pushes (default: origin)"
    )
    final.add_argument(
        "--into",
        metavar="BRANCH",
        help="the branch the pull requests merge into (default: the repository's default)",
    )
    add_env_option(final)
    final.add_argument("--quiet", action="store_true", help="no progress lines")


def _add_housekeeping_parsers(sub) -> None:
    _add_finalize_parser(sub)
    sessions = sub.add_parser("sessions", help=doc(cmd_sessions), description=doc(cmd_sessions))
    add_config_options(sessions)

    clean = sub.add_parser("clean", help=doc(cmd_clean), description=doc(cmd_clean))
    clean.add_argument("name", metavar="SESSION", help="the session to remove")
    clean.add_argument("--config", metavar="PATH", help="session config (for the repository)")
    clean.add_argument(
        "--branch", action="store_true", help="delete the session branch too (its kept commits)"
    )

    retry = sub.add_parser("retry", help=doc(cmd_retry), description=doc(cmd_retry))
    add_config_options(retry)
    retry.add_argument("ids", nargs="+", metavar="ID", help="experiment ids, e.g. main-0003")

    prune = sub.add_parser("prune", help=doc(cmd_prune), description=doc(cmd_prune))
    add_config_options(prune)
    prune.add_argument(
        "--keep",
        type=int,
        metavar="N",
        help="keep the logs of the last N experiments (default: session.keep_logs; 0 keeps "
        "only those of kept experiments, the first and last calibration, the last confirmation)",
    )
    prune.add_argument("--dry-run", action="store_true", help="list what would be removed")
