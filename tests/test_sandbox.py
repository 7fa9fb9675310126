"""The judge out of the candidate's reach: runs confined by bubblewrap, and the unconfined path
said plainly."""

from __future__ import annotations

import json
import os
import shutil
import socket
import sys
import tempfile
import uuid
from pathlib import Path

import pytest
from conftest import experiments, git, make_target, run, run_cli

from autoresearch.bench.bwrap import BWRAP_ENV, bwrap_problem
from autoresearch.bench.runners import LocalRunner
from autoresearch.bench.sandbox import Sandbox
from autoresearch.errors import UserError
from autoresearch.journal.placement import Confinement
from autoresearch.journal.store import read_journal
from autoresearch.repo.state_dir import session_paths


def _run(sandbox, command: str, tree: Path, log: Path, env: dict | None = None, **options):
    """One run of `command` in `tree` through the local runner, confined by `sandbox`."""
    return LocalRunner(sandbox=sandbox).run(
        command,
        cwd=tree,
        env=env or {},
        log_path=log,
        timeout_s=60,
        stop=None,
        on_start=None,
        token=None,
        **options,
    )


def test_this_machine_can_confine_runs():
    """The README's set-up and .ci/run install bubblewrap: every test here runs confined."""
    assert bwrap_problem() is None


def confine(target, mode: str = "auto", **options: str) -> str:
    """The target's config with its [sandbox] table set (auto: bwrap here); the text before."""
    lines = "".join(f"{key} = {value}\n" for key, value in options.items())
    text = target.config_path.read_text()
    unconfined = '[sandbox]\nmode = "off"\n'
    assert unconfined in text
    target.config_path.write_text(text.replace(unconfined, f'[sandbox]\nmode = "{mode}"\n{lines}'))
    git(target.root, "commit", "-qam", "sandbox settings")
    return text


@pytest.mark.e2e
def test_a_candidate_cannot_write_into_the_baseline_tree_and_is_never_kept(target):
    """The candidate's bench writes `v=1000` into the baseline's tree (so that the best would
    measure slow): confined, the baseline's tree is not even in its sight (the directory both
    trees live in is covered), the write fails and the baseline stays as it was."""
    confine(target)
    target.add_hypothesis("01-tamper", {"src/mode.txt": "tamper-baseline\n"})
    target.add_hypothesis("02-win", {"src/value.txt": "80\n"})

    run(target)

    first, second = experiments(target)
    assert first.status == "crash", (first.status, first.error)
    assert first.kept_commit is None
    assert first.confinement.tool == "bwrap" and first.confinement.network is False
    assert "No such file or directory" in Path(first.bench_logs[-1]).read_text()
    paths = session_paths(target.load())
    assert git(paths.baseline, "status", "--porcelain") == ""
    # The honest win after it measured against an intact best.
    assert second.status == "keep"
    assert second.decision.metrics["time_ms"].baseline_median == pytest.approx(100)


@pytest.mark.e2e
def test_the_repository_and_the_journal_are_read_only_to_a_run(target, tmp_path):
    """A build step that writes a hook, the repository's config and the journal (it knows
    where they are): the git directory's writes fail inside the sandbox; the journal's fails
    too, or (a checkout under /tmp, which a run sees only its git directory of) lands in the
    run's own /tmp; and the user's repository and journal are as they were."""
    build = target.root / "evil_build.py"
    build.write_text(
        "#!/usr/bin/env python3\n"
        "import pathlib, sys\n"
        f"common = pathlib.Path({str(target.root / '.git')!r})\n"
        "failed = []\n"
        "for path, text in ((common / 'hooks' / 'pre-commit', '#!/bin/sh\\n'),\n"
        "                   (common / 'config', '[core]\\n\\tfsmonitor = evil\\n'),\n"
        "                   (common.parent / 'experiments.jsonl', '')):\n"
        "    try:\n"
        "        path.write_text(text)\n"
        "    except OSError as exc:\n"
        "        failed.append(f'{path.name}: {exc.strerror}')\n"
        "print('\\n'.join(failed))\n"
        "sys.exit(0 if {'pre-commit', 'config'} <= {f.split(':')[0] for f in failed} else 1)\n"
    )
    build.chmod(0o755)
    target.configure(build="./evil_build.py")
    git(target.root, "add", "-A")
    git(target.root, "commit", "-qm", "a build that reaches for the repository")
    confine(target)
    config_before = (target.root / ".git" / "config").read_text()
    target.add_hypothesis("01-win", {"src/value.txt": "80\n"})

    run(target)

    (record,) = experiments(target)
    assert record.status == "keep", (record.status, record.error)
    assert not (target.root / ".git" / "hooks" / "pre-commit").exists()
    assert (target.root / ".git" / "config").read_text() == config_before
    journal = read_journal(target.journal)  # not emptied: the session and its calibrations
    assert len(journal.sessions) == 1 and journal.calibrations


def test_nothing_a_confined_run_starts_outlives_it(tmp_path):
    """A daemon that leaves the run's process group and session, with no token to find it by:
    unconfined it survives the run; confined, the pid namespace ends with the run."""
    command = "setsid sleep 300 < /dev/null > /dev/null 2>&1 & sleep 0.2"
    (tmp_path / "tree").mkdir()
    survivors = {}
    for name, sandbox in (("unconfined", None), ("confined", Sandbox())):
        mark = uuid.uuid4().hex
        result = _run(
            sandbox,
            command,
            tmp_path / "tree",
            tmp_path / f"{name}.log",
            {"DAEMON_MARK": mark},
            concurrent=True,  # no sweep of this process's new children: only the namespace
        )
        assert result.ok, result.tail
        survivors[name] = _marked(mark)
    for pid in survivors["unconfined"]:
        os.kill(pid, 9)
    assert survivors["unconfined"], "the unconfined daemon should have survived its run"
    assert survivors["confined"] == []


def test_a_toolchain_cache_pinned_outside_the_sandbox_moves_to_the_arms_own(tmp_path, monkeypatch):
    """GOCACHE pinned to the user's cache is read-only in the sandbox (go fails with
    "read-only file system"): the run writes an arm's own instead, the user's is untouched."""
    pinned = tmp_path / "users-go-build"
    pinned.mkdir()
    monkeypatch.setenv("GOCACHE", str(pinned))  # in the user's shell, not the run's own env
    tree = tmp_path / "arm"
    tree.mkdir()
    command = 'echo entry > "$GOCACHE/x" && echo "$GOCACHE" > where'
    result = _run(Sandbox(), command, tree, tmp_path / "pinned.log")
    assert result.ok, result.tail
    used = Path((tree / "where").read_text().strip())
    assert used != pinned and (used / "x").read_text() == "entry\n"
    assert tree.parent in used.parents and list(pinned.iterdir()) == []


def test_tools_on_path_under_tmp_stay_visible_read_only(tmp_path):
    """A virtualenv or a CI runner's toolchain under /tmp, on PATH: the private /tmp would hide
    it (the bench's `python3` then "required file not found"); it is mounted again, read-only."""
    tools = tmp_path / "venv" / "bin"
    tools.mkdir(parents=True)
    (tools / "greet").write_text("#!/bin/sh\necho hello from $0\n")
    (tools / "greet").chmod(0o755)
    (tmp_path / "tree").mkdir()
    result = _run(
        Sandbox(),
        "greet > said && (touch $(dirname $(command -v greet))/planted || echo refused > tried)",
        tmp_path / "tree",
        tmp_path / "tools.log",
        {"PATH": f"{tools}{os.pathsep}{os.environ['PATH']}"},
    )
    assert result.ok, result.tail
    assert (tmp_path / "tree" / "said").read_text() == f"hello from {tools / 'greet'}\n"
    assert (tmp_path / "tree" / "tried").exists() and not (tools / "planted").exists()


def test_a_confined_run_reaches_no_network_unless_allowed(tmp_path):
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    (tmp_path / "tree").mkdir()
    connect = f"import socket; socket.create_connection(('127.0.0.1', {port}), 5)"
    probe = f'{sys.executable} -c "{connect}"'
    try:
        outcomes = {}
        for network in (False, True):
            result = _run(
                Sandbox(network=network), probe, tmp_path / "tree", tmp_path / f"net-{network}.log"
            )
            outcomes[network] = result.ok
    finally:
        server.close()
    assert outcomes == {False: False, True: True}


@pytest.mark.e2e
def test_unconfined_runs_are_said_once_and_recorded(target):
    # The synthetic target's own setting: [sandbox] mode = "off".
    target.add_hypothesis("01-win", {"src/value.txt": "80\n"})

    done = run_cli("run", cwd=target.root, real=True)

    assert done.returncode == 0, done.stderr
    assert done.stderr.count("runs are not confined") == 1
    assert "write into the baseline's tree" in done.stderr
    (record,) = experiments(target)
    assert record.confinement == Confinement.unconfined('[sandbox] mode = "off"')


def test_required_confinement_refuses_a_machine_without_it(target, monkeypatch):
    text = confine(target, required="true")
    target.add_hypothesis("01-win", {"src/value.txt": "80\n"})

    done = run_cli("run", cwd=target.root, env={BWRAP_ENV: "/nonexistent/bwrap"}, real=True)

    assert done.returncode == 1
    assert "runs must be confined ([sandbox] required = true)" in done.stderr
    assert "/nonexistent/bwrap is not installed" in done.stderr
    assert experiments(target) == []
    target.config_path.write_text(text.replace('mode = "off"', 'mode = "sometimes"'))
    with pytest.raises(UserError, match=r"'sandbox\.mode' must be one of auto, bwrap, off"):
        target.load()


def _marked(mark: str) -> list[int]:
    """Live processes whose environment carries `mark`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = (entry / "environ").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if f"DAEMON_MARK={mark}".encode() in environ and state != "Z":
            found.append(int(entry.name))
    return found


@pytest.mark.e2e
def test_a_confined_agent_edits_its_tree_reaches_its_model_and_has_a_home_of_its_own(
    target, tmp_path, request
):
    """The agent CLI runs confined too: its edit is the proposal, the network is there (its
    model), your checkout is read-only to it, and it writes a copy of its settings, not yours;
    the rest of your home (a key beside the settings) it cannot see at all."""
    from test_agent import edit, use_agent

    # Outside /tmp (a confined run has a private one), where a home is.
    home = Path(__file__).with_name(f".home-{uuid.uuid4().hex[:8]}")
    request.addfinalizer(lambda: shutil.rmtree(home, ignore_errors=True))
    (home / ".claude").mkdir(parents=True)
    (home / ".claude" / "settings.json").write_text("yours")
    (home / ".ssh").mkdir()
    (home / ".ssh" / "id_ed25519").write_text("your key")
    io = tmp_path / "io"  # the stand-in's script and what it reports: shared with the sandbox
    io.mkdir()
    server = socket.create_server(("127.0.0.1", 0))
    probe = f"""
import json, os, pathlib, socket, subprocess
seen = {{}}
try:
    pathlib.Path({str(target.root)!r}, "README").write_text("an agent was here")
    seen["checkout"] = "written"
except OSError as exc:
    seen["checkout"] = exc.strerror
settings = pathlib.Path(os.environ["HOME"], ".claude", "settings.json")
seen["settings"] = settings.read_text()
settings.write_text("changed by the agent")
try:
    seen["key"] = pathlib.Path({str(home / ".ssh" / "id_ed25519")!r}).read_text()
except OSError as exc:
    seen["key"] = exc.strerror
try:
    socket.create_connection(("127.0.0.1", {server.getsockname()[1]}), 5).close()
    seen["network"] = "reached"
except OSError as exc:
    seen["network"] = str(exc)
seen["git"] = subprocess.run(["git", "status", "--porcelain"], capture_output=True).returncode
pathlib.Path({str(io / "seen.json")!r}).write_text(json.dumps(seen))
"""
    # A copy of the stand-in where the sandbox shows it: a clone under /tmp (the private /tmp
    # of a confined run hides it) runs this test too.
    standin = io / "standin_agent.py"
    shutil.copy(Path(__file__).with_name("standin_agent.py"), standin)
    step = edit("80\n", "a confined win", run=probe)
    use_agent(target, io, [step], home=[".claude"], command=f"{sys.executable} {standin}")
    confine(target, writable=f'["{io}"]')
    try:
        done = run_cli("run", cwd=target.root, env={"HOME": str(home)}, timeout=300)
    finally:
        server.close()

    assert done.returncode == 0, done.stderr
    seen = json.loads((io / "seen.json").read_text())
    assert seen == {
        "checkout": "Read-only file system",
        "settings": "yours",
        "key": "No such file or directory",
        "network": "reached",
        "git": 0,
    }
    assert (home / ".claude" / "settings.json").read_text() == "yours"
    assert (target.root / "README").read_text() == "synthetic target\n"
    (record,) = experiments(target)
    assert record.status == "keep", record.error
    assert record.agent.confinement["tool"] == "bwrap"


def test_a_confined_agent_command_under_tmp_is_said_to_be_out_of_its_sight(target, tmp_path):
    """An agent command named by its path under /tmp exists for the user, not in the agent's
    sandbox (its /tmp is private): the record says where it was looked for, and why."""
    from test_agent import edit, use_agent

    where = Path(f"/tmp/autoresearch-agent-{uuid.uuid4().hex[:8]}")
    where.mkdir()
    script = where / "agent.sh"
    script.write_text(
        f"#!/bin/sh\nexec {sys.executable} {Path(__file__).with_name('standin_agent.py')}\n"
    )
    script.chmod(0o755)
    use_agent(target, tmp_path, [edit("80\n", "a win")], command=str(script), max_proposals=1)
    confine(target)
    try:
        run(target)
    finally:
        shutil.rmtree(where)

    (record,) = experiments(target)
    assert record.status == "agent_failed"
    assert f"{script} was looked for inside the agent's sandbox" in record.error, record.error
    assert "/tmp is private to the sandbox" in record.error


def test_a_confined_run_has_no_capability_even_as_root(tmp_path):
    """Root inside the sandbox (CI runners, containers) would keep every capability: remount
    the read-only file system writable, write outside its tree, edit a dependency. Confined,
    it has none: the remount and the writes fail, its own tree is writable as before."""
    tree = tmp_path / "tree"
    tree.mkdir()
    # Outside /tmp (a confined run has a private one): beside the tests, read-only in there.
    outside = Path(__file__).with_name(f".outside-{uuid.uuid4().hex[:8]}.txt")
    outside.write_text("as it was\n")
    script = (
        "grep CapEff /proc/self/status; "
        "mount -o remount,bind,rw / 2>/dev/null && echo remounted; "
        f"echo changed > {outside} 2>/dev/null && echo wrote-outside; "
        "unshare -Urm true 2>/dev/null && echo nested-namespace; "
        "echo mine > mine.txt && echo wrote-tree"
    )
    try:
        done = _run(Sandbox(), script, tree, tmp_path / "log")
        after = outside.read_text()
    finally:
        outside.unlink()

    out = Path(done.log_path).read_text()
    assert "CapEff:\t0000000000000000" in out, out
    assert "remounted" not in out and "wrote-outside" not in out, out
    assert "nested-namespace" not in out, out
    assert "wrote-tree" in out and (tree / "mine.txt").read_text() == "mine\n"
    assert after == "as it was\n"


@pytest.mark.e2e
@pytest.mark.parametrize("what", ["bench", "bench-restored"])
def test_a_confined_run_cannot_rewrite_its_bench_script(target, what):
    """The bench script (and the checks') is read-only to a confined run: rewriting it while
    it runs, even with its bytes put back after (unseen by any look afterwards), fails. The
    candidate is never kept; the next one is."""
    confine(target)
    target.add_hypothesis(
        "01-rewrite", {"src/value.txt": "80\n", "src/mode.txt": f"tamper-{what}\n"}
    )
    target.add_hypothesis("02-win", {"src/speedup-b.txt": "0.8\n"})

    run(target)

    first, second = experiments(target)
    assert first.status == "crash", (first.status, first.error)
    assert "Read-only file system" in Path(first.bench_logs[-1]).read_text()
    assert second.status == "keep"


def test_a_confined_run_cannot_reach_a_unix_socket_on_the_host(tmp_path):
    """A container engine's socket, the user's bus or an agent's are files the read-only file
    system still shows, and connecting needs no write: confined, no Unix socket can be made
    (a socketpair between its own processes still can); unconfined, the same probe connects."""
    tree = tmp_path / "tree"
    tree.mkdir()
    # Outside /tmp (a confined run has a private one): beside the tests, as /run would be.
    path = Path(__file__).with_name(f".bus-{uuid.uuid4().hex[:8]}.sock")
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    server.listen()
    probe = (
        f'{sys.executable} -c \'import socket; a, b = socket.socketpair(); print("pair-ok"); '
        f'socket.socket(socket.AF_UNIX).connect("{path}"); print("connected")\''
    )
    try:
        confined = _run(Sandbox(), probe, tree, tmp_path / "confined.log")
        unconfined = _run(None, probe, tree, tmp_path / "unconfined.log")
    finally:
        server.close()
        path.unlink()

    out = Path(confined.log_path).read_text()
    assert "pair-ok" in out and "connected" not in out, out
    assert "PermissionError" in out, out
    assert "connected" in Path(unconfined.log_path).read_text()


@pytest.mark.e2e
@pytest.mark.parametrize("named_in", ["the command", "its script"])
def test_an_interpreter_named_under_tmp_runs_confined(target, named_in):
    """`init --python /tmp/venv/bin/python3` writes a bench naming an interpreter under /tmp,
    which the run's private /tmp would hide (exit 127): what a command, or the script it runs
    (init's autoresearch.sh), names there is shown again, read-only."""
    where = Path(f"/tmp/autoresearch-venv-{uuid.uuid4().hex[:8]}")
    (where / "bin").mkdir(parents=True)
    (where / "bin" / "python3").symlink_to(sys.executable)
    confine(target)
    command = f"{where}/bin/python3 bench.py"
    if named_in == "its script":
        script = target.root / "bench.sh"
        script.write_text(f'#!/usr/bin/env bash\nset -eu\ncd "$(dirname "$0")"\n{command}\n')
        script.chmod(0o755)
        command = "./bench.sh"
    text = target.config_path.read_text()
    target.config_path.write_text(text.replace('command = "./bench.py"', f'command = "{command}"'))
    git(target.root, "add", "-A")
    git(target.root, "commit", "-qm", "an interpreter under /tmp")
    target.add_hypothesis("01-win", {"src/value.txt": "80\n"})
    try:
        run(target)
    finally:
        shutil.rmtree(where)

    (record,) = experiments(target)
    assert record.status == "keep", (record.status, record.error)
    assert record.confinement.tool == "bwrap"


@pytest.mark.e2e
def test_nothing_tells_a_run_which_arm_it_is_in(target):
    """A defeat device kept with a real win: in the best's tree (told by the tree's name, its
    detached HEAD, the mount table's sources) it runs slower whenever a changed tree runs
    beside it, so that every null after it would look like a win. Confined, both arms run at
    one path, under names that say nothing, with the directory around them and the
    repository's git directory out of sight: it never fires, and the null is not kept."""
    confine(target)
    device = {"src/value.txt": "90\n", "src/mode.txt": "device\n"}
    target.add_hypothesis("01-win-and-device", device)
    target.add_hypothesis("02-null", {"src/other.txt": "x\n"})

    run(target)

    first, second = experiments(target)
    assert first.status == "keep", (first.status, first.error)
    assert second.status == "discard", (second.status, second.decision)
    paths = session_paths(target.load())
    assert {paths.worktree.name, paths.baseline.name}.isdisjoint({"worktree", "baseline"})
    seen = {r.confinement.tree_seen_at for r in (first, second)}
    assert seen == {str(paths.root / "tree")}


@pytest.mark.e2e
def test_a_confined_run_does_not_see_your_checkout_but_what_its_scripts_name_there():
    """Your checkout, where it usually is (not under /tmp, which a run's private /tmp hides
    whole): what you keep there untracked (notes, data, the package an editable install
    points the interpreter at), the journal and the queue are not a run's to read: a bench
    that reads them would measure, or learn, what is not its tree. Only the ways to what the
    run needs stay in sight: the interpreter its script names in the project's .venv."""
    place = Path(tempfile.mkdtemp(dir="/var/tmp", prefix="autoresearch-checkout-"))
    try:
        target = make_target(place / "repo")
        root = target.root
        (root / ".venv" / "bin").mkdir(parents=True)
        (root / ".venv" / "bin" / "python3").symlink_to(sys.executable)
        (root / "notes.txt").write_text("what you keep beside the code\n")
        with open(root / ".git" / "info" / "exclude", "a") as ignored:
            ignored.write(".venv/\nnotes.txt\n")
        script = root / "peek.sh"
        script.write_text(
            "#!/usr/bin/env bash\nset -u\n"
            f"if cat {root}/notes.txt; then echo 'read your checkout' >&2; exit 3; fi\n"
            f"if cat {root}/experiments.jsonl; then echo 'read the journal' >&2; exit 3; fi\n"
            f'exec {root}/.venv/bin/python3 ./bench.py "$@"\n'
        )
        script.chmod(0o755)
        (root / "experiments.jsonl").write_text("")
        text = target.config_path.read_text().replace('"./bench.py"', '"./peek.sh"', 1)
        target.config_path.write_text(text)
        git(root, "add", "peek.sh")
        confine(target)

        done = run_cli("check", cwd=root)

        said = done.stdout + done.stderr
        assert done.returncode == 0, said
        assert "ready" in said

        # A module imported from your checkout (an editable install's path) is not found, and
        # check says what to do.
        (root / "mine").mkdir()
        (root / "mine" / "fastpath.py").write_text("VALUE = 1\n")
        script.write_text(
            "#!/usr/bin/env bash\nset -eu\n"
            f"PYTHONPATH={root}/mine {root}/.venv/bin/python3 -c 'import fastpath'\n"
            'exec ./bench.py "$@"\n'
        )
        git(root, "commit", "-qam", "a module from the checkout")
        refused = run_cli("check", cwd=root)
        said = refused.stdout + refused.stderr
        assert refused.returncode != 0 and "the bench fails on the unmodified code" in said
        assert "a module is not found where the run imports it" in said and "PYTHONPATH" in said
    finally:
        shutil.rmtree(place)


def test_checks_that_need_git_are_told_how_to_see_it(target):
    """Confined runs do not see the repository's git directory: checks that call git fail
    the pre-flight with a hint naming `[sandbox] git`, and pass with it."""
    text = target.config_path.read_text().replace(
        'command = "./checks.py"', 'command = "git rev-parse --verify HEAD"'
    )
    target.config_path.write_text(text)
    confine(target)

    refused = run_cli("check", cwd=target.root)

    assert refused.returncode != 0
    said = refused.stdout + refused.stderr
    assert "the checks fail on the unmodified code" in said and "[sandbox] git = true" in said
    text = target.config_path.read_text()
    target.config_path.write_text(text.replace('mode = "auto"\n', 'mode = "auto"\ngit = true\n'))
    git(target.root, "commit", "-qam", "git in sight")
    shown = run_cli("check", cwd=target.root)
    assert shown.returncode == 0, shown.stdout + shown.stderr


def test_a_build_that_needs_the_network_is_told_how_to_get_it(target, tmp_path):
    """Confined runs have no network: a build that fetches fails the pre-flight with a hint
    (fetch first, or `[sandbox] build_network`); with it, the build alone reaches out, and the
    checks still cannot."""
    # This machine's own address, not loopback: a run without the network has no route to it
    # ("Network is unreachable", as a fetch from a registry would fail).
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    probe.connect(("192.0.2.1", 9))  # no packet sent: the route's source address
    address = probe.getsockname()[0]
    probe.close()
    server = socket.create_server((address, 0))
    reach = f"import socket; socket.create_connection(('{address}', {server.getsockname()[1]}), 5)"
    (target.root / "fetch.py").write_text(f"{reach}\nprint('fetched')\n")
    (target.root / "offline.py").write_text(
        f"try:\n    {reach}\nexcept OSError:\n    raise SystemExit(0)\nraise SystemExit('online')\n"
    )
    text = target.config_path.read_text()
    text = text.replace('build = ""', f'build = "{sys.executable} fetch.py"')
    text = text.replace('command = "./checks.py"', f'command = "{sys.executable} offline.py"')
    target.config_path.write_text(text)
    git(target.root, "add", "-A")
    confine(target)
    try:
        refused = run_cli("check", cwd=target.root)
        said = refused.stdout + refused.stderr
        assert refused.returncode != 0 and "the build fails on the unmodified code" in said
        assert "reached for the network" in said and "build_network = true" in said

        text = target.config_path.read_text().replace(
            'mode = "auto"\n', 'mode = "auto"\nbuild_network = true\n'
        )
        target.config_path.write_text(text)
        git(target.root, "commit", "-qam", "the build fetches")
        allowed = run_cli("check", cwd=target.root)
    finally:
        server.close()
    assert allowed.returncode == 0, allowed.stdout + allowed.stderr


def test_confined_runs_are_told_the_toolchains_are_offline(tmp_path):
    """Without the network, each toolchain's own offline switch (Cargo resolves from the
    index `cargo fetch` left); what the user set stands; with the network, none."""
    tree = tmp_path / "tree"
    tree.mkdir()
    offline = Sandbox().wrap(tree, {"GOPROXY": "file:///srv/goproxy"})
    online = Sandbox(network=True).wrap(tree, {})
    for confined in (offline, online):
        confined.close()
    assert offline.env["CARGO_NET_OFFLINE"] == "true" and offline.env["PIP_NO_INDEX"] == "1"
    assert offline.env["GOPROXY"] == "file:///srv/goproxy"
    assert "CARGO_NET_OFFLINE" not in online.env


@pytest.mark.skipif(shutil.which("go") is None, reason="needs Go")
def test_a_go_build_in_a_tree_whose_git_is_out_of_sight_stamps_nothing(tmp_path, monkeypatch):
    """Go stamps a binary with what git says of the tree it finds a `.git` in, and fails the
    build when git, out of sight, cannot say. On a machine with no `go env -w` settings
    (GOENV=off) the build works, and the flags a user set stay."""
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "go.mod").write_text("module m\n\ngo 1.22\n")
    (repo / "main.go").write_text("package main\n\nfunc main() {}\n")
    git(repo, "init", "-q")
    git(repo, "add", ".")
    git(repo, "-c", "user.email=a@b", "-c", "user.name=a", "commit", "-qm", "a module")
    tree = repo / ".git" / "state" / "arm"
    git(repo, "worktree", "add", "-q", "--detach", str(tree))
    monkeypatch.setenv("GOENV", "off")
    for flags in (None, "-mod=mod"):
        if flags:
            monkeypatch.setenv("GOFLAGS", flags)
        command = "go build -n -o out . 2>build.err && echo $GOFLAGS > flags"
        result = _run(Sandbox(one_path=True), command, tree, tmp_path / "go.log")
        assert result.ok, (tree / "build.err").read_text()
        assert (tree / "flags").read_text().split() == [
            *([flags] if flags else []),
            "-buildvcs=false",
        ]


def test_what_the_fetch_left_is_read_only_to_every_run(tmp_path):
    """A candidate that rewrote the dependency sources `[bench] fetch` left (in the session's
    state, beside both arms' trees, which a run otherwise does not see) would build the other
    arm from its own: every run reads them, none writes them."""
    state = tmp_path / "state"
    tree, fetched = state / "arm", state / "fetched"
    tree.mkdir(parents=True)
    fetched.mkdir()
    (fetched / "dep.h").write_text("#define FAST 1\n")
    sandbox = Sandbox(one_path=True, fetched=(fetched,))
    poison = f"cat {fetched}/dep.h; echo '#define FAST 0' > {fetched}/dep.h; cat {fetched}/dep.h"
    done = _run(sandbox, poison, tree, tmp_path / "run.log")
    seen = (tmp_path / "run.log").read_text()
    assert done.exit_code == 0 and seen.count("#define FAST 1") == 2, seen
    assert "Read-only file system" in seen
    assert (fetched / "dep.h").read_text() == "#define FAST 1\n"
    # Without it among what the run is shown, the state around the tree is out of sight.
    hidden = _run(Sandbox(one_path=True), f"cat {fetched}/dep.h", tree, tmp_path / "hidden.log")
    assert hidden.exit_code != 0


def test_the_fetch_runs_in_your_checkout_and_the_confined_build_reads_it(target):
    """`[bench] fetch` runs before the night's first build in your checkout (your code, not a
    candidate's: a confined run would be in the arm's tree, at `<state>/tree`); what it
    leaves in $AUTORESEARCH_FETCHED the confined build reads through the same variable."""
    text = target.config_path.read_text()
    fetch = 'fetch = "pwd > \\"$AUTORESEARCH_FETCHED/where\\""\n'
    text = text.replace('build = ""', 'build = "cp \\"$AUTORESEARCH_FETCHED/where\\" fetched-in"')
    target.config_path.write_text(text.replace("[bench]\n", "[bench]\n" + fetch, 1))
    git(target.root, "add", "-A")
    confine(target)
    done = run_cli("check", cwd=target.root)  # the build's copy failing would fail it
    assert done.returncode == 0, done.stdout + done.stderr
    fetched = session_paths(target.load()).root / "fetched" / "where"
    assert fetched.read_text().strip() == str(target.root)
