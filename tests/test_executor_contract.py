"""What every executor does for the one night (autoresearch/loop/executor.py): one suite, run
against each executor there is. The night's own behaviour (a result lands the same way
whichever executor measured it) is asserted once here for all of them.

- `Contract`: every executor. This machine's (`LocalExecutor`, one slot) and the in-process
  bench hosts (`FakeHosts`, tests/fake_executor.py: the hosts' own measuring code, no Dask)
  in the fast tier; real Dask workers in the e2e tier.
- `SlotsContract`: what several slots bring: results that land against a best that moved, a
  host lost under a job, a scheduler that goes away, a driver that dies with jobs out. The
  fake hosts script them in seconds; tests/test_cluster.py kills real Dask processes.
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path
from typing import ClassVar

import pytest
from conftest import experiments, git, local_cluster, run_cli, seen
from fake_executor import FakeHosts
from inprocess import InProcess

from autoresearch.bench.runners import LocalRunner
from autoresearch.errors import UserError
from autoresearch.journal.store import read_journal
from autoresearch.loop.driver import run_session
from autoresearch.loop.local import LocalExecutor
from autoresearch.loop.session import RunOptions
from autoresearch.progress import Progress
from autoresearch.repo.state_dir import session_paths


def fixed_pairs(target, **more) -> None:
    """A noiseless bench decided at its first look (3 pairs), and a knob of its own for a
    second win in a file of its own."""
    target.configure(min_runs=3, max_runs=3, looks=1, **more)
    (target.root / "src" / "knobs.txt").write_text("k = 1\n")
    git(target.root, "add", "-A")
    git(target.root, "commit", "-qm", "fixed pairs, a knob")


class Contract:
    """A night on this executor keeps what wins, and nothing else, one record each."""

    env: ClassVar[dict[str, str]] = {"BENCH_COST": "value * k"}

    def night(self, target, tmp_path: Path, said: io.StringIO | None = None, **options):
        """`autoresearch run` on `target` with this executor; its outcome."""
        raise NotImplementedError

    def test_wins_are_kept_the_rest_discarded_each_journaled_once(self, target, tmp_path):
        fixed_pairs(target)
        target.add_hypothesis("a-value", {"src/value.txt": "80\n"}, title="value down")
        target.add_hypothesis("b-knob", {"src/knobs.txt": "k = 0.9\n"}, title="knob down")
        target.add_hypothesis("c-noop", {"src/noop.txt": "nothing\n"}, title="no effect")
        target.add_hypothesis("0-loss", {"src/knobs.txt": "k = 1.5\n"}, title="knob up")

        outcome = self.night(target, tmp_path)

        records = experiments(target)
        by_title = {r.title: r for r in records}
        assert sorted(r.n for r in records) == [1, 2, 3, 4]  # one record each, none skipped
        assert by_title["value down"].status == "keep"
        assert by_title["no effect"].status == "discard"
        assert by_title["knob up"].status == "discard"
        assert outcome.kept == sum(r.status == "keep" for r in records) >= 1
        # The session branch is a line of the kept commits, each on the one kept before it.
        keeps = sorted((r for r in records if r.status == "keep"), key=lambda r: r.ended_at)
        chain = git(target.root, "rev-list", "--first-parent", "autoresearch/t").split()
        assert [r.kept_commit for r in reversed(keeps)] == chain[: len(keeps)]
        assert git(target.root, "show", "autoresearch/t:src/value.txt") == "80\n"
        # The base and every kept commit were calibrated, the last keep too: the best's
        # figure is its own measurement the morning after.
        calibrated = {c.commit for c in read_journal(target.journal).calibrations}
        base = read_journal(target.journal).sessions[0].base_commit
        assert calibrated >= {base, *(r.kept_commit for r in keeps)}
        # Nothing left in flight, and the checkout untouched.
        paths = session_paths(target.load())
        assert not list(paths.flights.glob("*.json")) and not paths.inflight.exists()
        assert git(target.root, "status", "--porcelain", "--untracked-files=no") == ""

    def test_a_run_that_fails_is_its_experiment_s_status(self, target, tmp_path):
        fixed_pairs(target)
        target.add_hypothesis("a-crash", {"src/mode.txt": "crash\n"}, title="crashes")
        target.add_hypothesis("b-garbage", {"src/mode.txt": "garbage\n"}, title="garbage")

        outcome = self.night(target, tmp_path)

        statuses = {r.title: r.status for r in experiments(target)}
        assert statuses == {"crashes": "crash", "garbage": "crash"}
        assert outcome.kept == 0
        assert git(target.root, "rev-list", "--count", "main..autoresearch/t").strip() == "0"

    def test_a_patch_outside_the_scope_ends_on_the_driver(self, target, tmp_path):
        fixed_pairs(target)
        target.add_hypothesis("a-bench", {"bench.py": "print('METRIC time_ms=1')\n"})
        target.add_hypothesis("b-value", {"src/value.txt": "80\n"}, title="value down")

        self.night(target, tmp_path)

        records = {r.title: r for r in experiments(target)}
        assert records["a-bench"].status in ("scope_violation", "protected_path")
        assert not records["a-bench"].bench_logs  # never measured
        assert records["value down"].status == "keep"

    def test_each_best_is_profiled_on_the_driver_off_the_timed_runs(self, target, tmp_path):
        fixed_pairs(target)
        config = target.config_path
        profile = '[profile]\ncommand = "cp src/profile.txt \\"$AUTORESEARCH_PROFILE_OUT\\""\n'
        config.write_text(config.read_text() + profile)
        (target.root / "src" / "profile.txt").write_text("main;put;get 40\nmain;put;write 60\n")
        git(target.root, "add", "-A")
        git(target.root, "commit", "-qm", "a profile")
        changes = {"src/value.txt": "80\n", "src/profile.txt": "main;put;write 100\n"}
        target.add_hypothesis("a-skip-the-read", changes, title="value down")

        self.night(target, tmp_path)

        (record,) = experiments(target)
        base = read_journal(target.journal).sessions[0].base_commit
        profiles = session_paths(target.load()).profiles
        assert (profiles / f"{base}.folded").read_text().count("get") == 1
        assert "get" not in (profiles / f"{record.kept_commit}.folded").read_text()

    def test_the_confirmation_measures_the_base_against_the_tip(self, target, tmp_path):
        fixed_pairs(target)
        target.add_hypothesis("a-value", {"src/value.txt": "80\n"}, title="value down")

        outcome = self.night(target, tmp_path, confirm=True)

        (confirmation,) = read_journal(target.journal).confirmations
        assert confirmation.change_pct == pytest.approx(outcome.confirmed_change_pct)
        assert confirmation.change_pct == pytest.approx(-20.0, abs=0.5)
        assert confirmation.runs_per_arm == target.load().decision.confirm_runs
        assert confirmation.tip_commit == git(target.root, "rev-parse", "autoresearch/t").strip()


class LocalNight:
    """This machine: one slot, the session's own worktrees, the synthetic scripts in-process."""

    def night(self, target, tmp_path: Path, said: io.StringIO | None = None, **options):
        options.setdefault("accept_noise", True)
        options.setdefault("confirm", False)
        config = target.load()
        runner = InProcess(LocalRunner.of(config))
        opts = RunOptions(env=dict(self.env), runner=runner, **options)
        return run_session(config, opts, Progress(said, quiet=said is None), LocalExecutor)


class TestLocal(LocalNight, Contract):
    pass


class FakeNight:
    """Two bench hosts in this process; `script(hosts)` before the night, `self.hosts` after."""

    hosts_n = 2
    hosts: FakeHosts

    def night(self, target, tmp_path: Path, said=None, script=None, **options):
        options.setdefault("accept_noise", True)
        options.setdefault("confirm", False)
        config = target.load()
        runner = InProcess(LocalRunner.of(config))
        opts = RunOptions(env=dict(self.env), runner=runner, **options)

        def hosts(session):
            self.hosts = FakeHosts(session, tmp_path / "hosts", self.hosts_n)
            if script is not None:
                script(self.hosts)
            return self.hosts

        return run_session(config, opts, Progress(said, quiet=said is None), hosts)


class SlotsContract:
    """What several slots bring, scripted by the fake hosts."""

    def test_a_win_whose_best_moved_is_measured_again_before_its_keep(self, target, tmp_path):
        fixed_pairs(target)
        target.config_path.write_text(
            target.config_path.read_text() + '\n[cluster]\nremeasure_when = "always"\n'
        )
        git(target.root, "commit", "-qam", "measure a stale win again, always")
        target.add_hypothesis("a-value", {"src/value.txt": "80\n"}, title="value down")
        target.add_hypothesis("b-knob", {"src/knobs.txt": "k = 0.9\n"}, title="knob down")

        outcome = self.night(target, tmp_path)

        assert outcome.kept == 2
        first, second = sorted(experiments(target), key=lambda r: r.ended_at)
        base = read_journal(target.journal).sessions[0].base_commit
        # Both sent against the base at once; the one landing second had won against a best
        # that moved, and was measured again on the new best before its keep.
        assert [s.parent for s in second.cluster.stale] == [base]
        assert second.cluster.stale[0].change_pct < -5
        assert second.parent_commit == first.kept_commit and first.cluster.stale == []
        assert git(target.root, "show", "autoresearch/t:src/knobs.txt") == "k = 0.9\n"

    def test_a_win_whose_files_the_keeps_did_not_touch_is_kept_on_its_measurement(
        self, target, tmp_path
    ):
        fixed_pairs(target)
        target.add_hypothesis("a-value", {"src/value.txt": "80\n"}, title="value down")
        target.add_hypothesis("b-knob", {"src/knobs.txt": "k = 0.9\n"}, title="knob down")
        said = io.StringIO()

        outcome = self.night(target, tmp_path, said)

        assert outcome.kept == 2
        first, second = sorted(experiments(target), key=lambda r: r.ended_at)
        base = read_journal(target.journal).sessions[0].base_commit
        assert first.parent_commit == second.parent_commit == base
        assert second.cluster.kept_on == first.kept_commit and second.cluster.stale == []
        tip_parent = git(target.root, "rev-parse", f"{second.kept_commit}^").strip()
        assert tip_parent == first.kept_commit
        assert "touched none of its files: kept on that measurement" in said.getvalue()

    def test_a_stale_win_that_no_longer_applies_is_apply_failed(self, target, tmp_path):
        fixed_pairs(target)
        target.add_hypothesis("a-value", {"src/value.txt": "80\n"}, title="value to 80")
        target.add_hypothesis("b-value", {"src/value.txt": "85\n"}, title="value to 85")

        outcome = self.night(target, tmp_path)

        assert outcome.kept == 1
        (failed,) = [r for r in experiments(target) if r.status == "apply_failed"]
        assert "does not apply to the new best" in failed.asi.rollback_reason
        assert failed.cluster.stale[0].change_pct < -5
        assert failed.decision.metrics["time_ms"].change_pct < -5  # the evidence it won on


class TestFakeHosts(FakeNight, Contract, SlotsContract):
    """Faults only a script can time exactly."""

    def test_a_job_lost_with_its_host_is_sent_again_recorded_once_and_the_host_said(
        self, target, tmp_path
    ):
        fixed_pairs(target)
        target.add_hypothesis("a-value", {"src/value.txt": "80\n"}, title="value down")
        said = io.StringIO()

        outcome = self.night(target, tmp_path, said, script=lambda h: h.lose("t-0001"))

        (record,) = experiments(target)
        assert record.status == "keep" and outcome.kept == 1
        assert [e for _, kind, e in self.hosts.measured if kind == "experiment"] == ["t-0001"]
        # Which host was lost, and what it was measuring, is said where the user looks: the
        # progress as it happens, the record, `status`, the report and the PR.
        (lost,) = record.cluster.lost
        host = lost.host
        assert host in self.hosts.hosts and lost.at and "KilledWorker" in lost.why
        assert f"t-0001: bench host {host} was lost while it measured it (KilledWorker" in (
            said.getvalue()
        )
        line = f"bench hosts lost: {host} (while measuring #1)"
        for command in ("status", "report"):
            assert line in run_cli(command, cwd=target.root).stdout, command
        pr = run_cli("pr", "--out", str(tmp_path / "pr.md"), cwd=target.root)
        assert pr.returncode == 0, pr.stderr
        assert f"- Bench hosts lost: {host} (while measuring #1)." in seen(
            (tmp_path / "pr.md").read_text()
        )

    def test_a_calibration_lost_with_its_host_is_measured_again_and_the_host_said(
        self, target, tmp_path
    ):
        fixed_pairs(target)
        target.add_hypothesis("a-value", {"src/value.txt": "80\n"}, title="value down")
        base = git(target.root, "rev-parse", "HEAD")

        def lose_the_first_calibration(hosts):
            hosts.lose(f"calibration-{base[:12]}")

        outcome = self.night(target, tmp_path, script=lose_the_first_calibration)

        assert outcome.kept == 1
        calibration = read_journal(target.journal).calibrations[0]
        (lost,) = calibration.lost
        assert lost["host"] in self.hosts.hosts and "KilledWorker" in lost["why"]
        line = f"bench hosts lost: {lost['host']} (while measuring a calibration)"
        for command in ("status", "report"):
            assert line in run_cli(command, cwd=target.root).stdout, command
        page = tmp_path / "review.html"
        assert run_cli("report", "--html", str(page), cwd=target.root).returncode == 0
        assert f"Bench hosts lost: {lost['host']} (while measuring a calibration)." in (
            page.read_text()
        )

    def test_a_job_its_hosts_keep_dying_under_is_a_crash(self, target, tmp_path):
        fixed_pairs(target)
        target.add_hypothesis("a-value", {"src/value.txt": "80\n"}, title="value down")

        self.night(target, tmp_path, script=lambda h: h.lose("t-0001", times=3))

        (record,) = experiments(target)
        assert record.status == "crash"
        assert "3 bench hosts died running it" in record.asi.rollback_reason

    def test_a_job_that_broke_on_its_host_is_undecided(self, target, tmp_path):
        fixed_pairs(target)
        target.add_hypothesis("a-value", {"src/value.txt": "80\n"}, title="value down")
        target.add_hypothesis("b-knob", {"src/knobs.txt": "k = 0.9\n"}, title="knob down")

        self.night(target, tmp_path, script=lambda h: h.break_on("t-0001"))

        records = {r.id: r for r in experiments(target)}
        assert records["t-0001"].status == "interrupted"
        assert "could not run it: RuntimeError" in records["t-0001"].asi.rollback_reason
        assert records["t-0002"].status == "keep"

    def test_a_scheduler_that_comes_back_gets_every_job_out_again(self, target, tmp_path):
        fixed_pairs(target)
        target.add_hypothesis("a-value", {"src/value.txt": "80\n"}, title="value down")
        target.add_hypothesis("b-knob", {"src/knobs.txt": "k = 0.9\n"}, title="knob down")
        said = io.StringIO()

        # The first landing is the base's calibration; the scheduler goes with both
        # experiments out.
        outcome = self.night(
            target, tmp_path, said, script=lambda h: h.lose_scheduler(after=1, back=True)
        )

        assert outcome.kept == 2
        assert sorted(r.id for r in experiments(target)) == ["t-0001", "t-0002"]
        assert "the scheduler at fake:// is back: sending the 2 job(s) out again" in said.getvalue()

    def test_a_scheduler_gone_for_good_stops_the_night_naming_it(self, target, tmp_path):
        fixed_pairs(target)
        target.add_hypothesis("a-value", {"src/value.txt": "80\n"}, title="value down")
        target.add_hypothesis("b-knob", {"src/knobs.txt": "k = 0.9\n"}, title="knob down")

        with pytest.raises(UserError, match="the fake scheduler was lost for good: the exp"):
            self.night(target, tmp_path, script=lambda h: h.lose_scheduler(after=1, back=False))

        records = experiments(target)
        assert sorted(r.status for r in records) == ["interrupted", "interrupted"]
        assert git(target.root, "status", "--porcelain", "--untracked-files=no") == ""
        # The next night measures them again.
        self.night(target, tmp_path)
        again = [r for r in experiments(target) if r.retry_of]
        assert sorted(r.title for r in again) == ["knob down", "value down"]

    def test_a_dead_driver_s_jobs_are_sent_again_by_the_next_night(self, target, tmp_path):
        fixed_pairs(target)
        target.add_hypothesis("a-value", {"src/value.txt": "80\n"}, title="value down")
        target.add_hypothesis("b-knob", {"src/knobs.txt": "k = 0.9\n"}, title="knob down")

        class Died(BaseException):
            """The driver's process ending mid-night (kill -9): nothing after it runs."""

        def die_with_jobs_out(hosts: FakeHosts) -> None:
            landed = hosts.landed

            def then_die(timeout):
                if len(hosts.out) == 2:
                    raise Died
                return landed(timeout)

            hosts.landed = then_die

        with contextlib.suppress(Died):
            self.night(target, tmp_path, script=die_with_jobs_out)
        flights = session_paths(target.load()).flights
        assert len(list(flights.glob("*.json"))) == 2 and experiments(target) == []

        outcome = self.night(target, tmp_path)

        records = experiments(target)
        assert sorted(r.id for r in records) == ["t-0001", "t-0002"]  # under their own numbers
        assert outcome.kept == 2 and not list(flights.glob("*.json"))

    def test_a_host_that_leaves_takes_its_slot_with_it(self, target, tmp_path):
        fixed_pairs(target)
        for i, value in enumerate((90, 80, 70)):
            target.add_hypothesis(f"{i}-value", {"src/value.txt": f"{value}\n"})

        self.night(target, tmp_path, script=lambda h: h.leave("host-1"))

        assert len(experiments(target)) == 3
        assert {host for host, _, _ in self.hosts.measured} == {"host-0"}


@pytest.mark.e2e
class TestDaskHosts(Contract, SlotsContract):
    """Real Dask workers in processes of their own, each a bench host with its own clone; the
    synthetic scripts run as processes there."""

    def night(self, target, tmp_path: Path, said=None, **options):
        from autoresearch.cluster import bench_hosts

        options.setdefault("accept_noise", True)
        options.setdefault("confirm", False)
        config = target.load()
        progress = Progress(said, quiet=said is None)
        with (
            local_cluster(tmp_path, workers=2) as cluster,
            bench_hosts(config, cluster.scheduler_address, progress) as hosts,
        ):
            return run_session(config, RunOptions(env=dict(self.env), **options), progress, hosts)


def test_the_fake_hosts_measure_with_the_hosts_own_code(target, tmp_path):
    """The fake is a scheduler, not a bench: each job is measured in a host clone of its own by
    cluster/host.py, and the records name the host."""
    fixed_pairs(target)
    target.add_hypothesis("a-value", {"src/value.txt": "80\n"}, title="value down")
    night = FakeNight()
    night.env = Contract.env

    night.night(target, tmp_path)

    (record,) = experiments(target)
    assert record.cluster.host in ("host-0", "host-1")
    clones = sorted(p.parent.parent.name for p in (tmp_path / "hosts").glob("*/repo/.git"))
    assert clones and set(clones) <= {"host-0", "host-1"}
    kinds = [kind for _, kind, _ in night.hosts.measured]
    assert kinds == ["calibrate", "experiment", "calibrate"]
