"""The run's "n of N": N fixed at the first experiment, work added later shown beside it."""

from __future__ import annotations

import io

from autoresearch.progress import Plan, Progress


def _counts(calls):
    plan = Plan()
    return [plan.count(*call) for call in calls]


def test_a_known_plan_keeps_its_n_as_the_queue_empties():
    # Ten queued, none added: 10 all night, however the proposers' count falls.
    calls = [(n, 10 - (n - 1), 0, 100 - (n - 1)) for n in range(1, 11)]
    assert {of for of, _ in _counts(calls)} == {"10"}
    assert all(grew is None for _, grew in _counts(calls))


def test_a_second_look_is_counted_beside_the_plan_with_its_reason():
    counts = _counts([(1, 3, 0, 100), (2, 2, 0, 99), (3, 1, 1, 98), (4, 0, 1, 97)])
    assert [of for of, _ in counts] == ["3", "3", "3+1", "3+1"]
    assert counts[2][1] == "1 more experiment than planned: a second look at a near miss"
    assert counts[3][1] is None  # said once


def test_proposals_that_arrive_later_are_counted_beside_it_too():
    counts = _counts([(1, 2, 0, 100), (2, 3, 0, 99)])
    assert counts[1] == ("2+2", "2 more experiments than planned: new proposals arrived")


def test_a_search_that_cannot_say_counts_against_the_budget():
    counts = _counts([(1, None, 0, 20), (2, None, 0, 19), (3, None, 1, 18)])
    assert [of for of, _ in counts] == ["<=20"] * 3


def test_the_budget_bounds_a_plan_larger_than_it():
    # A resumed session: 5 done, 5 left of a budget of 10, 30 queued.
    counts = _counts([(6, 30, 0, 5), (7, 29, 0, 4)])
    assert [of for of, _ in counts] == ["10", "10"]


def test_the_label_carries_the_count():
    stream = io.StringIO()
    progress = Progress(stream)
    progress.experiment(3, "10+1", "presize the batch")
    progress.experiment(4, None, "on a bench host")
    assert stream.getvalue().splitlines() == ["[3/10+1] presize the batch", "[4] on a bench host"]
