"""The commands an agent drives its own session with: try, result, state, history, mcp."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path

from ..errors import UserError
from ..statuses import EXIT_CODES
from .common import EXIT_USER_ERROR, add_config_options, add_env_option, config_of, doc


def cmd_try(args: argparse.Namespace) -> int:
    """Judge a change an agent made, as one experiment of the session; the outcome as JSON."""
    from ..agents.outcome import outcome
    from ..agents.tries import try_change
    from ..loop.session import RunOptions
    from ..progress import Progress

    if args.patch and args.worktree:
        raise UserError("give --patch FILE or --worktree DIR, not both")
    config = config_of(args)
    if args.detach:
        from ..agents.tries import start_detached

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


def cmd_result(args: argparse.Namespace) -> int:
    """The outcome of a try started with --detach (waits with --wait SECONDS)."""
    from ..agents.tries import read_result

    result = read_result(config_of(args), args.id, args.wait)
    print(json.dumps(result, indent=2))
    if result["status"] == "running":
        return 0
    code = result.get("exit_code")
    return code if isinstance(code, int) and 0 <= code < 256 else EXIT_USER_ERROR


def cmd_mcp(args: argparse.Namespace) -> int:
    """Serve the session to an agent over MCP (stdio): state, history, ideas, try, report."""
    from ..agents.mcp_server import serve

    serve(config_of(args))
    return 0


def cmd_state(args: argparse.Namespace) -> int:
    """Where the session stands, for an agent: baseline, best, noise, threshold, budget left."""
    from ..morning.status import session_status

    print(json.dumps(session_status(config_of(args)), indent=2))
    return 0


def cmd_history(args: argparse.Namespace) -> int:
    """The session's last experiments, compact, with their evidence and ASI."""
    from ..agents.outcome import history_rows

    rows = history_rows(config_of(args), args.last)
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    for row in rows:
        change = f"{row['change_pct']:+.1f}%" if row["change_pct"] is not None else "n/a"
        why = row["reason"] or ""
        print(f"#{row['n']:<4} {row['status']:<15} {change:>8}  {row['title']}: {why}"[:200])
    return 0


def cmd_profile(args: argparse.Namespace) -> int:
    """Where the best's time goes: its profile's top frames (taken after each calibration);
    --fresh takes one now, in a worktree of its own, with no timed run."""
    from ..agents.outcome import best_profile_now

    config = config_of(args)
    found = best_profile_now(config, args.fresh, dict(args.env))
    if args.json:
        print(json.dumps(found, indent=2))
        return 0 if found.get("profile") else 1
    if not found.get("profile"):
        print(f"no profile: {found['why']}", file=sys.stderr)
        return 1
    from ..profiles import profile_lines

    print("\n".join(profile_lines(found["profile"], config.profile.top)))
    return 0


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


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "try": cmd_try,
    "result": cmd_result,
    "mcp": cmd_mcp,
    "state": cmd_state,
    "history": cmd_history,
    "profile": cmd_profile,
}


def add_parsers(sub) -> None:
    """This group's subcommands, in the order `--help` lists them."""
    attempt = sub.add_parser(
        "try",
        help=doc(cmd_try),
        description=doc(cmd_try)
        + " Exit codes: "
        + ", ".join(f"{code} {status}" for status, code in EXIT_CODES.items())
        + "; 1 an error (a held session lock, a bad patch file).",
    )
    add_config_options(attempt)
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
    add_env_option(attempt)
    attempt.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    attempt.add_argument(
        "--detach",
        action="store_true",
        help="start it in the background and print its id at once; `autoresearch result ID` "
        "reads the outcome",
    )

    result = sub.add_parser("result", help=doc(cmd_result), description=doc(cmd_result))
    add_config_options(result)
    result.add_argument("id", help="the id `try --detach` printed")
    result.add_argument(
        "--wait", type=float, default=0.0, metavar="SECONDS", help="wait up to this long"
    )

    mcp = sub.add_parser("mcp", help=doc(cmd_mcp), description=doc(cmd_mcp))
    add_config_options(mcp)

    state = sub.add_parser("state", help=doc(cmd_state), description=doc(cmd_state))
    add_config_options(state)
    state.add_argument("--json", action="store_true", help="JSON (the only format; for symmetry)")

    profile = sub.add_parser("profile", help=doc(cmd_profile), description=doc(cmd_profile))
    add_config_options(profile)
    profile.add_argument(
        "--fresh", action="store_true", help="profile the best now (its build and one run)"
    )
    add_env_option(profile)
    profile.add_argument("--json", action="store_true", help="machine-readable output")

    history = sub.add_parser("history", help=doc(cmd_history), description=doc(cmd_history))
    add_config_options(history)
    history.add_argument("--last", type=int, default=10, metavar="N", help="0: all (default 10)")
    history.add_argument("--json", action="store_true", help="machine-readable output")
