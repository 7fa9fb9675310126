"""The review page (`report --html`, `serve`) opened in a real headless Chromium (Debian's
package, driven by Playwright): it loads with no console error, its plots render, its filters
and its rows work, and every number on it is the journal's."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import urllib.error
import urllib.request

import pytest
from conftest import experiments, git, run, run_cli

from autoresearch.repo.state_dir import SessionLock, session_paths
from autoresearch.report.render import _pct

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
# As root, with no network: no sandbox of its own, none of its background connections.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@pytest.fixture(scope="module")
def browser():
    assert CHROMIUM, "the review page tests need Chromium: apt-get install chromium"
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield launched
        launched.close()


@pytest.fixture
def night(target):
    """Two families, two proposers' worth of outcomes: two wins, a null, a loss; confirmed."""
    target.configure(min_runs=3, max_runs=6, confirm="true")
    git(target.root, "commit", "-qam", "confirmed nights")
    for name, factor, family in (
        ("01-fewer-copies", "0.8", "copies"),
        ("02-same-copies", "1.0", "copies"),
        ("03-bigger-alloc", "1.3", "alloc"),
        ("04-pooled-alloc", "0.7", "alloc"),
    ):
        target.add_hypothesis(
            name,
            {f"src/speedup-{name}.txt": f"{factor}\n"},
            hypothesis=f"{name} changes the work",
            mechanism=f"{name} mechanism",
            family=family,
        )
    target.add_hypothesis("05-<script>", {"src/speedup-x.txt": "0.99\n"}, title="<b>bold</b>")
    outcome = run(target, env={"BENCH_NOISE_PCT": "1"})
    assert outcome.kept >= 2
    return target


def open_page(browser, url: str):
    page = browser.new_page()
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(str(e)))
    page.goto(url)
    return page, problems


@pytest.mark.e2e
def test_the_page_shows_the_journal_s_numbers_and_its_filters_work(night, browser, tmp_path):
    out = tmp_path / "review.html"
    done = run_cli("report", "--html", str(out), cwd=night.root)
    assert done.returncode == 0, done.stderr
    reported = run_cli("report", "--format", "json", cwd=night.root)
    assert reported.returncode == 0, reported.stderr
    summary = json.loads(reported.stdout)
    records = experiments(night)

    page, problems = open_page(browser, out.as_uri())

    # The headline and the counts, as `report` says them.
    assert page.inner_text("#headline-change") == _pct(summary["headline_change_pct"])
    confirmed = summary["confirmation"]["change_pct"]
    assert page.inner_text("#confirmed") == _pct(confirmed, 2)
    assert page.inner_text("#count-experiments") == str(summary["experiments"])
    # The plots render (decoded images, not broken ones).
    widths = page.eval_on_selector_all("img.plot", "imgs => imgs.map(i => i.naturalWidth)")
    assert widths and all(w > 0 for w in widths)
    # Each row is its record: status and change.
    for record in records:
        row = page.locator(f"#exp-{record.n}")
        assert row.locator("td").nth(2).inner_text() == record.status
        assert row.locator("td.change").inner_text() == _pct(record.evidence().change_pct)
    assert page.locator("#exp-5 td").nth(1).inner_text() == "<b>bold</b>"  # text, not markup

    # Filters: by status, then by family on top.
    kept = [r for r in records if r.status == "keep"]
    page.select_option("#filter-status", "keep")
    assert _visible(page) == sorted(r.n for r in kept)
    assert page.inner_text("#shown") == f"{len(kept)} of {len(records)} shown"
    page.select_option("#filter-family", "alloc")
    assert _visible(page) == sorted(r.n for r in kept if r.family == "alloc")
    page.select_option("#filter-status", "")
    assert _visible(page) == sorted(r.n for r in records if r.family == "alloc")
    page.select_option("#filter-family", "")
    page.select_option("#filter-proposer", "queue")
    assert len(_visible(page)) == len(records)

    # A row opens onto its evidence: the samples measured, as recorded.
    first = kept[0]
    evidence = page.locator(f"#evidence-{first.n}")
    assert not evidence.is_visible()
    page.click(f"#exp-{first.n}")
    assert evidence.is_visible()
    samples = first.decision.metrics["time_ms"].baseline_samples
    shown = evidence.locator(".samples-baseline").first.inner_text()
    assert [float(x) for x in shown.split(", ")] == samples
    assert "diff --git" in evidence.locator("pre.patch").inner_text()

    # The branches finalize would cut: one per kept change (each in a file of its own).
    branches = page.eval_on_selector_all(".group", "gs => gs.map(g => g.dataset.branch)")
    assert len(branches) == len(kept)
    assert problems == []


def _visible(page) -> list[int]:
    return page.eval_on_selector_all(
        "tr.exp", "rows => rows.filter(r => !r.hidden).map(r => Number(r.dataset.n))"
    )


@pytest.mark.e2e
def test_serve_renders_the_page_afresh_and_asks_for_reloads_while_a_night_runs(night, browser):
    server = subprocess.Popen(
        [sys.executable, "-m", "autoresearch.cli", "serve", "--port", "0", "--refresh", "7"],
        cwd=night.root,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = server.stdout.readline()
        url = re.search(r"http://\S+/", line).group(0)
        page, problems = open_page(browser, url)
        assert page.inner_text("#count-experiments") == str(len(experiments(night)))
        assert page.locator("meta[http-equiv=refresh]").count() == 0
        assert problems == []

        # A night running (the session's lock held): the page updates itself.
        with SessionLock(session_paths(night.load()).lock):
            held = urllib.request.urlopen(url, timeout=60).read().decode()
        assert '<body data-live="7">' in held
        assert "a night is running: this page updates itself every 7 s" in held
        with pytest.raises(urllib.error.HTTPError) as missing:
            urllib.request.urlopen(url + "elsewhere", timeout=60)
        assert missing.value.code == 404
    finally:
        server.terminate()
        server.communicate(timeout=30)


def test_serve_names_a_journal_it_cannot_review_before_serving(tmp_path, target):
    target.journal.write_text('{"not": "a journal line"}\n')
    done = run_cli("serve", "--port", "0", cwd=target.root, timeout=60)
    assert done.returncode == 1
    assert done.stderr.startswith("error: ") and "journal" in done.stderr


def _serve(root, *args: str) -> tuple[subprocess.Popen, str]:
    server = subprocess.Popen(
        [sys.executable, "-m", "autoresearch.cli", "serve", "--port", "0", *args],
        cwd=root, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    line = server.stdout.readline()
    return server, re.search(r"http://\S+/", line).group(0)


@pytest.mark.e2e
def test_served_before_the_night_it_waits_and_then_becomes_the_review(target, browser):
    target.add_hypothesis("01-win", {"src/value.txt": "80\n"})
    server, url = _serve(target.root, "--refresh", "1")
    try:
        page, problems = open_page(browser, url)
        assert "Waiting for the night" in page.inner_text("h1")
        run(target)
        page.wait_for_selector("#count-experiments", timeout=30_000)
        assert page.inner_text("#count-experiments") == "1"
        assert problems == []
    finally:
        server.terminate()
        server.communicate(timeout=30)


@pytest.mark.e2e
def test_the_live_page_keeps_the_reader_s_place_and_shows_the_experiment_in_flight(night, browser):
    """While a night runs: a new experiment lands in place, the filter, the open row and the
    scroll stay; the experiment in flight is shown with its phase; no request but the page's
    own address; at 390 px nothing scrolls sideways and the keyboard opens rows."""
    paths = session_paths(night.load())
    records = experiments(night)
    kept = [r for r in records if r.status == "keep"]
    server, url = _serve(night.root, "--refresh", "1")
    try:
        with SessionLock(paths.lock):
            page, problems = open_page(browser, url)
            requests: list[str] = []
            page.on("request", lambda r: requests.append(r.url))
            page.select_option("#filter-status", "keep")
            page.click(f"#exp-{kept[0].n}")
            page.evaluate("window.scrollTo(0, 300)")
            where = f"document.getElementById('exp-{kept[0].n}').getBoundingClientRect().top"
            before = page.evaluate(where)
            paths.inflight.write_text(
                json.dumps(
                    {"fields": {"id": "t-0099", "title": "in the air"}, "phase": "bench",
                     "updated_at": "2026-01-01T00:00:00+00:00"}
                )
            )  # fmt: skip
            last = [json.loads(x) for x in night.journal.read_text().splitlines()]
            row = next(d for d in reversed(last) if d.get("status") == "keep" and "n" in d)
            n = max(r.n for r in records) + 1
            again = {**row, "n": n, "id": f"t-{n:04d}", "title": "landed while you read"}
            with open(night.journal, "a") as journal:
                journal.write(json.dumps(again) + "\n")

            page.wait_for_selector(f"#exp-{n}", state="attached", timeout=30_000)
            page.wait_for_selector("#inflight", timeout=30_000)

            assert page.eval_on_selector("#filter-status", "s => s.value") == "keep"
            assert page.locator(f"#evidence-{kept[0].n}").is_visible()
            assert page.evaluate(where) == pytest.approx(before, abs=2)  # the reader's place
            assert "t-0099 in the air: bench" in page.inner_text("#inflight")
            assert f"{len(kept) + 1} of {len(records) + 1} shown" == page.inner_text("#shown")
            assert {u.split("#")[0] for u in requests} <= {url}
            assert problems == []
    finally:
        paths.inflight.unlink(missing_ok=True)
        server.terminate()
        server.communicate(timeout=30)


@pytest.mark.e2e
def test_the_page_at_390_px_by_keyboard_with_permalinks_and_sorting(night, browser, tmp_path):
    out = tmp_path / "review.html"
    assert run_cli("report", "--html", str(out), cwd=night.root).returncode == 0
    records = experiments(night)
    page = browser.new_page(viewport={"width": 390, "height": 800})
    problems: list[str] = []
    page.on("pageerror", lambda e: problems.append(str(e)))
    target = records[1]
    page.goto(out.as_uri() + f"#exp-{target.n}")

    # No sideways scroll at 390 px.
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    # The permalink opened its row.
    assert page.locator(f"#evidence-{target.n}").is_visible()
    # The keyboard reaches every row and opens one.
    first = records[0].n
    page.focus(f"#exp-{first}")
    page.keyboard.press("Enter")
    assert page.locator(f"#evidence-{first}").is_visible()
    page.keyboard.press("Enter")
    assert not page.locator(f"#evidence-{first}").is_visible()
    tabbable = page.eval_on_selector_all("tr.exp", "rows => rows.every(r => r.tabIndex === 0)")
    assert tabbable
    # Sorting by change: ascending, then descending.
    page.click("#experiments th:nth-child(4)")
    changes = [r.evidence().change_pct for r in records]
    order = page.eval_on_selector_all("tr.exp", "rows => rows.map(r => Number(r.dataset.n))")
    by_change = sorted(
        records, key=lambda r: (r.evidence().change_pct is None, r.evidence().change_pct or 0)
    )
    assert order == [r.n for r in by_change], (order, changes)
    page.click("#experiments th:nth-child(4)")
    order = page.eval_on_selector_all("tr.exp", "rows => rows.map(r => Number(r.dataset.n))")
    assert order[0] == by_change[-1].n or by_change[-1].evidence().change_pct is None
    # What a merge decision needs: settings, where, the branches with their commands.
    assert "decision.alpha" in page.inner_text("#settings")
    assert "measured with" in page.inner_text("#where")
    assert "git checkout autoresearch/t-" in page.inner_text("#branches")
    assert page.locator("#whole-diff").count() == 1
    assert problems == []
