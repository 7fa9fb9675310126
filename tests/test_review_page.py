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

from autoresearch.loop.session_dir import SessionLock, session_paths
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
    samples = first.decision["metrics"]["time_ms"]["baseline_samples"]
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

        # A night running (the session's lock held): the page asks to be reloaded.
        with SessionLock(session_paths(night.load()).lock):
            held = urllib.request.urlopen(url, timeout=60).read().decode()
        assert '<meta http-equiv="refresh" content="7">' in held
        assert "a night is running" in held
        with pytest.raises(urllib.error.HTTPError) as missing:
            urllib.request.urlopen(url + "elsewhere", timeout=60)
        assert missing.value.code == 404
    finally:
        server.terminate()
        server.communicate(timeout=30)


def test_serve_names_a_journal_it_cannot_review_before_serving(tmp_path, target):
    done = run_cli("serve", "--port", "0", cwd=target.root, timeout=60)
    assert done.returncode == 1
    assert done.stderr.startswith("error: ") and "journal" in done.stderr
