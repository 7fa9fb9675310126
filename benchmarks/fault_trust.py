"""The fault suite's categories for trust (see faults.py): a candidate that reaches for the
repository, the checkout or the journal, unconfined (the seal) and confined (the sandbox); a
misbehaving coding agent; odd input to `try` and `result`.

Each fault is judged on the night's invariants (fault_night.py) and on its own promise: a
tampering candidate is never kept, the repository (config, hooks, refs, the checkout's branch)
is exactly as before, and every answer is a record or a one-line error.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from fault_night import ROOT, Night, Tally
from synthetic import git

from autoresearch.bench.bwrap import bwrap_problem
from autoresearch.journal.store import read_journal
from autoresearch.loop.session import session_paths

__all__ = ["TRUST_CATEGORIES"]

# What a candidate's bench does to the repository, the checkout or the journal (synthetic.py).
REACHES = [
    "hook",
    "fsmonitor",
    "hookspath",
    "email",
    "exclude",
    "branch",
    "untracked",
    "replace",
    "journal-forge",
    "journal-wipe",
    "baseline-untracked",
    "stash",
]


def repository_state(root: Path) -> dict:
    """What the user would look at in the morning: the git directory's files, the refs but the
    session's own, the checkout's branch."""
    common = root / ".git"
    files = {}
    for path in sorted(
        [common / "config", common / "info" / "exclude", *(common / "hooks").iterdir()]
    ):
        data = path.read_bytes() if path.is_file() else b""
        files[path.name] = hashlib.sha256(data).hexdigest()
    refs = git(root, "for-each-ref", "--format=%(refname) %(objectname)")
    return {
        "files": files,
        "refs": [r for r in refs.splitlines() if "refs/heads/autoresearch/" not in r],
        "branch": git(root, "symbolic-ref", "-q", "HEAD").strip(),
        "stash": git(root, "stash", "list"),
    }


# Where the reach is made from: the candidate's bench, its build, its checks, or the coding
# agent that writes it (proposing, before any of those runs).
STAGES = ["bench", "build", "checks", "agent"]


def _reaching_night(tally: Tally, trials: int, confined: bool) -> None:
    """Each reach in a night of its own (a kept one would move the best under the next): a 20%
    win that reaches, from the stage whose turn it is, run to the end, judged. Over 48 trials
    every reach is made from every stage."""
    outcomes: dict[str, list[str]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(trials):
            what, stage = REACHES[i % len(REACHES)], STAGES[(i + i // len(REACHES)) % len(STAGES)]
            home = Path(tmp) / f"{i:02d}"
            home.mkdir()
            night = Night(home, {"sandbox": "bwrap" if confined else "off", "build": "./build.py"})
            if stage == "agent":
                _reaching_agent(night, home / "io", what, confined)
            else:
                mode = f"tamper-{what}" + ("" if stage == "bench" else f"@{stage}")
                night.queue(
                    f"01-reach-{what}", {"src/mode.txt": f"{mode}\n", "src/value.txt": "80\n"}
                )
            (night.root / "README").write_text("your uncommitted work\n")  # what a stash takes
            night.checkout = night._checkout_state()
            before = repository_state(night.root)
            night.finish()
            problems = night.check()
            if repository_state(night.root) != before:
                problems["dirty_trees"] += 1
            record = read_journal(night.target.journal).experiments[0]
            held = _held(record, what, stage, confined)
            problems["commits_unrecorded"] += 0 if held else 1
            label = f"{what} from the {stage}: {record.status}"
            tally.add(problems, f"{label} {record.error or ''}"[:300])
            outcomes.setdefault(record.status, []).append(f"{what}@{stage}")
    tally.notes.append("; ".join(f"{k}: {', '.join(v)}" for k, v in sorted(outcomes.items())))


def _reaching_agent(night: Night, home: Path, what: str, confined: bool) -> None:
    """The stand-in agent proposes a win and, while it edits, makes the reach itself; then an
    honest win. Confined, its script and stand-in sit in a directory the sandbox shares."""
    home.mkdir()
    paths = session_paths(night.target.load())
    common = night.root / ".git"
    reach = (
        "import pathlib, sys\n"
        "sys.path.insert(0, '.'); sys.dont_write_bytecode = True\n"
        "import reach\n"
        "try:\n"
        f"    reach.reach({what!r}, pathlib.Path('.').resolve(), pathlib.Path({str(common)!r}),"
        f" pathlib.Path({str(paths.baseline)!r}))\n"
        "except OSError as exc:  # a read-only file system: the agent shrugs and proposes\n"
        "    print(exc)\n"
    )
    steps = [
        {"do": "edit", "files": {"src/value.txt": "80\n"}, "title": "reaches", "run": reach},
        {"do": "edit", "files": {"src/value.txt": "70\n"}, "title": "honest", "family": "h"},
    ]
    use_standin(night, home, steps, writable=confined)


def _held(record, what: str, stage: str, confined: bool) -> bool:
    """The reach's own promise (the repository's state is compared apart): nothing kept
    against a best measured slowed; unconfined, the reach is caught and put back (a bench,
    build or checks run is tampered, an agent's proposal refused); confined, it failed: a crash
    or failed checks when the run tripped over the read-only file system, a keep or a discard
    when it shrugged (a git call that failed)."""
    if record.status == "keep" and record.evidence().baseline_median != 100.0:
        return False
    if confined:
        return record.status in ("crash", "checks_failed", "keep", "discard", "tampered")
    if "NOT put back" in (record.error or ""):
        return False
    if stage == "agent":
        refusal = record.agent.refusal if record.agent is not None else None
        return record.status == "refused" and refusal == "reach"
    return record.status == "tampered"


def unconfined_reaches(tally: Tally, trials: int) -> None:
    """The seal: every reach is caught, called tampered, and put back."""
    _reaching_night(tally, trials, confined=False)


def confined_reaches(tally: Tally, trials: int) -> None:
    """The sandbox: every reach fails, and the repository is as it was."""
    problem = bwrap_problem()
    if problem is not None:
        tally.notes.append(f"not run: {problem}")
        return
    _reaching_night(tally, trials, confined=True)


# -- a misbehaving agent -----------------------------------------------------------------------

STANDIN = ROOT / "tests" / "standin_agent.py"
AGENT_STEPS = [
    {"hypothesis_special": "fifo"},
    {"hypothesis_special": "zero"},
    {"hypothesis_text": '{"title": "t", "hypothesis": "h", "family": "f", "input_tokens": 1e400}'},
    {"title": "t" * 400_000},
    {"break_git": True},
    {"run": "import pathlib; pathlib.Path('.git').write_text('gitdir: /nowhere\\n')"},
    {"do": "crash"},
    {"do": "hang"},
    {"move_branch": "refs/heads/autoresearch/t"},
    {"commit": True},
    {"do": "error"},
]


def use_standin(
    night: Night, home: Path, steps: list[dict], writable: bool = False, timeout_s: int = 20
) -> None:
    """The night's proposer: the stand-in agent playing `steps`. `writable`: its script and a
    copy of the stand-in in `home`, shared with the sandbox (a confined run's /tmp hides the
    rest of /tmp)."""
    script = home / "script.json"
    script.write_text(json.dumps(steps))
    standin = STANDIN
    if writable:
        standin = home / STANDIN.name
        shutil.copy(STANDIN, standin)
    text = night.target.config_path.read_text().replace('[proposer]\ndir = "hypotheses"\n', "")
    if writable:
        text = text.replace('mode = "bwrap"\n', f'mode = "bwrap"\nwritable = ["{home}"]\n')
    night.target.config_path.write_text(
        text + '\n[[proposer]]\nkind = "agent"\npreset = "command"\n'
        f'command = "{sys.executable} {standin}"\ntimeout_s = {timeout_s}\n'
        f"max_proposals = {len(steps)}\n"
        f'[proposer.env]\nSTANDIN_SCRIPT = "{script}"\n'
    )
    night.commit("an agent proposes")


def misbehaving_agents(tally: Tally, trials: int) -> None:
    """Each misbehaviour, then an honest proposal: the night goes on to it and keeps it."""
    with tempfile.TemporaryDirectory() as tmp:
        night = Night(Path(tmp), {})
        steps = []
        for i in range(trials):
            bad = AGENT_STEPS[i % len(AGENT_STEPS)]
            edit = {"do": "edit", "files": {"src/value.txt": f"{90 - i}\n"}, "family": f"f{i}"}
            steps.append({**edit, "title": f"misbehaves {i}", **bad})
        steps.append({"do": "edit", "files": {"src/value.txt": "50\n"}, "title": "honest"})
        use_standin(night, Path(tmp), steps, timeout_s=5)
        code = night.cli("run", "--quiet")
        problems = night.check(finished=False)
        records = read_journal(night.target.journal).experiments
        kept_honest = any(r.title == "honest" and r.status == "keep" for r in records)
        for i in range(trials):
            one = dict(problems) if i == 0 else dict.fromkeys(problems, 0)
            one["records_lost"] += 0 if (code == 0 and kept_honest) else 1
            tally.add(one, f"{next(iter(AGENT_STEPS[i % len(AGENT_STEPS)]))}: exit {code}")


# -- try and result --------------------------------------------------------------------------


# What a confused agent sends the MCP server: each answer an error result of one line (or a
# plain answer), never a traceback, and the server goes on serving.
MCP_CASES = [
    ("try_result", {"id": "try-../x"}),
    ("try_result", {"id": "try-\0"}),
    ("try_result", {"id": "x", "wait_s": "NaN"}),
    ("try_result", {"id": ["a list"]}),
    ("try_start", {"title": "t", "patch": "x", "worktree": "."}),
    ("try_start", {"title": "a\0b", "patch": "x"}),
    ("try_start", {"title": "t", "worktree": "/nonexistent/tree"}),
    ("history", {"last": "many"}),
    ("history", {"last": -5}),
    ("ideas_add", {"text": "\0"}),
]


def odd_inputs(tally: Tally, trials: int) -> None:
    """`try`, `result` and the MCP tools given what a confused agent gives: a one-line answer
    each."""
    with tempfile.TemporaryDirectory() as tmp:
        night = Night(Path(tmp), {})
        night.cli("status")
        cases = _odd_commands(night, Path(tmp))
        mcp = [i for i in range(trials) if i % (len(cases) + len(MCP_CASES)) >= len(cases)]
        answers = dict(zip(mcp, _mcp_answers(night, Path(tmp), len(mcp)), strict=True))
        for i in range(trials):
            k = i % (len(cases) + len(MCP_CASES))
            if i in answers:
                (tool, arguments), answered = MCP_CASES[k - len(cases)], answers[i]
                label, code = f"mcp {tool} {arguments!r}"[:80], 0
            else:
                label, args = cases[k]
                code, answered = _answer(night, args())
            problems = night.check(finished=False)
            problems["tracebacks"] += 0 if answered else 1
            tally.add(problems, f"{label}: exit {code}")


def _odd_commands(night: Night, tmp: Path) -> list[tuple[str, Callable[[], list[str]]]]:
    """`try` given what is not a patch file, `result` of what is not a try or of try files in
    every broken state."""
    tries = session_paths(night.target.load()).root / "tries"
    tries.mkdir(parents=True, exist_ok=True)
    fifo = tmp / "fifo.patch"
    os.mkfifo(fifo)
    cases: list[tuple[str, Callable[[], list[str]]]] = [
        ("try --patch a FIFO", lambda: ["try", "--patch", str(fifo), "--title", "x"]),
        ("try --patch /dev/zero", lambda: ["try", "--patch", "/dev/zero", "--title", "x"]),
        ("try --patch a directory", lambda: ["try", "--patch", str(tmp), "--title", "x"]),
        ("result of a path", lambda: ["result", "try-../../x"]),
        ("result of nothing", lambda: ["result", "try-20990101T000000"]),
    ]
    for n, (pid, outcome) in enumerate(
        [(None, None), ("x", None), ("1 1", "[1]"), ("1 1", "{"), ("1 1", '{"status": 3}')]
    ):
        name = f"try-20260101T00000{n}"
        (tries / f"{name}.log").write_text("the last line\n")
        if pid is not None:
            (tries / f"{name}.pid").write_text(pid)
        if outcome is not None:
            (tries / f"{name}.json").write_text(outcome)
        cases.append(
            (
                f"result with pid {pid!r}, outcome {outcome!r}",
                lambda n=n: ["result", f"try-20260101T00000{n}"],
            )
        )
    return cases


def _mcp_answers(night: Night, tmp: Path, count: int) -> list[bool]:
    """The first `count` of MCP_CASES (in turn) sent to one `autoresearch mcp` over stdio
    through the SDK's client; whether each was answered as promised, and the server served on
    (a `state` call after them) with no traceback on its stderr."""
    if not count:
        return []
    import asyncio

    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    errlog = tmp / "mcp-stderr.txt"
    command = (
        f"exec {shlex.quote(sys.executable)} -m autoresearch.cli mcp 2>>{shlex.quote(str(errlog))}"
    )
    server = StdioServerParameters(
        command="sh", args=["-c", command], cwd=str(night.root), env=night.env()
    )
    calls = [MCP_CASES[i % len(MCP_CASES)] for i in range(count)]

    async def session() -> tuple[list, bool]:
        async with Client(server, read_timeout_seconds=120) as client:
            answers = [await client.call_tool(tool, arguments) for tool, arguments in calls]
            serving = not (await client.call_tool("state", {})).is_error
        return answers, serving

    try:
        answers, serving = asyncio.run(session())
    except Exception as exc:  # the client lost the server: every answer failed
        night.stderr.append(f"Traceback-like: the MCP session ended: {exc!r}")
        return [False] * count
    clean = serving and "Traceback" not in errlog.read_text(errors="replace")
    return [clean and _one_line(answer) for answer in answers]


def _one_line(answer) -> bool:
    """An error result naming the problem (one line of ours; the SDK's own check of an
    argument's type says it in a few), or a plain answer."""
    if not answer.is_error:
        return True
    text = answer.content[0].text if answer.content else ""
    if "Traceback" in text or not text.startswith("Error executing tool"):
        return False
    return "\n" not in text or "validation error" in text.splitlines()[0]


def _answer(night: Night, args: list[str]) -> tuple[int, bool]:
    """Run one command; whether it answered as promised: a one-line `error:`, or (`result`)
    a JSON answer on stdout, and never a traceback."""
    done = night.captured(*args, timeout=60)
    if "Traceback" in done.stderr or done.returncode not in (0, 1):
        return done.returncode, False
    lines = done.stderr.strip().splitlines()
    if lines and lines[-1].startswith("error:"):
        return done.returncode, True
    try:
        return done.returncode, isinstance(json.loads(done.stdout).get("status"), str)
    except (ValueError, AttributeError):
        return done.returncode, False


TRUST_CATEGORIES: dict[str, tuple[str, Callable[[Tally, int], None], int, int]] = {
    "seal": ("repository reaches, unconfined (the seal)", unconfined_reaches, 48, 12),
    "sandbox": ("repository reaches, confined (bubblewrap)", confined_reaches, 48, 12),
    "agents": ("misbehaving agents", misbehaving_agents, 11, 11),
    "inputs": ("odd try, result and MCP input", odd_inputs, 20, 20),
}
