"""METRIC lines and go bench rows."""

import math
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from autoresearch.bench.metrics import (
    MAX_MAGNITUDE,
    parse_go_bench,
    parse_metrics,
    read_run_metrics,
)
from autoresearch.config import BenchConfig
from autoresearch.errors import MetricParseError
from autoresearch.readers.rows import is_minimum, minimum_of


def test_metric_lines_among_other_output():
    text = "building...\nMETRIC a_ms=12.5\n  METRIC b_bytes = 3e6  \nMETRICS x=1\nno METRICS=3\n"
    assert parse_metrics(text) == {"a_ms": 12.5, "b_bytes": 3e6}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        # The timed program printed a forged line and no newline: the bench's real line glued on.
        ("METRIC t_ms=1.0\ndoneMETRIC t_ms=50\n", "line 2: METRIC text in the middle of a line"),
        ("noise METRIC b=1\n", "line 1: METRIC text in the middle of a line"),
        ("ok\nMETRIC t_ms=1.0", "line 2: the output ends inside a line holding METRIC text"),
    ],
)
def test_a_metric_line_counts_only_whole(text, message):
    with pytest.raises(MetricParseError, match=message):
        parse_metrics(text, "bench.log")


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("METRIC a_ms=fast", "line 2: METRIC a_ms has value 'fast', which is not a finite number"),
        ("METRIC a_ms=nan", "not a finite number"),
        ("METRIC a_ms=inf", "not a finite number"),
        ("METRIC a_ms", "line 2: malformed METRIC line 'METRIC a_ms'"),
        ("METRIC =3", "malformed METRIC line"),
        ("METRIC a b=3", "malformed METRIC line"),
    ],
)
def test_bad_metric_lines_name_the_line(line, message):
    with pytest.raises(MetricParseError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_metrics(f"ok\n{line}\n", "bench.log")


def test_a_metric_printed_twice_is_an_error():
    with pytest.raises(MetricParseError, match="printed twice \\(first on line 1\\)"):
        parse_metrics("METRIC a=1\nMETRIC a=2\n")


@given(
    st.dictionaries(
        st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,20}", fullmatch=True),
        st.floats(min_value=-MAX_MAGNITUDE, max_value=MAX_MAGNITUDE),
        max_size=8,
    )
)
def test_metric_round_trip(values):
    text = "".join(f"METRIC {k}={v!r}\n" for k, v in values.items())
    assert parse_metrics(text) == values


@given(st.floats(min_value=MAX_MAGNITUDE, exclude_min=True), st.sampled_from([1, -1]))
def test_values_whose_median_would_overflow_are_refused(value, sign):
    with pytest.raises(MetricParseError, match="magnitude"):
        parse_metrics(f"METRIC x={sign * value!r}\n")


@given(st.text())
def test_parser_never_fails_on_text_without_metric_lines(text):
    clean = "\n".join(line for line in text.splitlines() if "METRIC" not in line)
    assert parse_metrics(clean) == {}


GO_OUTPUT = """\
goos: linux
BenchmarkWritePack/100k-2         	       1	812345678 ns/op	 91234567 B/op	  1200345 allocs/op
BenchmarkWritePack/100k-2         	       1	812345000 ns/op	 91234567 B/op	  1200345 allocs/op
BenchmarkWritePack/100k-2         	       1	900000000 ns/op	 91234567 B/op	  1200345 allocs/op
BenchmarkRead-8   	    5000	     23456 ns/op	  12.50 MB/s	   4.000 pages/op
PASS
"""


def test_go_bench_rows_become_metrics_with_medians():
    metrics = parse_go_bench(GO_OUTPUT)
    assert metrics["writepack_100k_ns_op"] == 812345678
    assert metrics["writepack_100k_bytes_op"] == 91234567
    assert metrics["writepack_100k_allocs_op"] == 1200345
    assert metrics["read_ns_op"] == 23456
    assert metrics["read_mb_s"] == 12.5
    assert metrics["read_pages_op"] == 4.0
    # Printed three times (-count 3): each time per operation's fastest beside its median; a
    # benchmark printed once has none, nor has what is not a time.
    assert metrics["writepack_100k_min_ns_op"] == 812345000
    assert "read_min_ns_op" not in metrics and "writepack_100k_min_bytes_op" not in metrics
    assert minimum_of("writepack_100k_ns_op") == "writepack_100k_min_ns_op"
    assert is_minimum("writepack_100k_min_ns_op") and not is_minimum("writepack_100k_ns_op")


def parse_output(text: str, go_bench: bool) -> dict[str, float]:
    return read_run_metrics(BenchConfig(go_bench=go_bench), text, Path("."), "bench.log")


def test_metric_lines_win_over_go_rows():
    text = GO_OUTPUT + "METRIC read_ns_op=1\n"
    assert parse_output(text, go_bench=True)["read_ns_op"] == 1
    assert "read_mb_s" not in parse_output(text, go_bench=False)
    assert math.isclose(parse_output(text, go_bench=True)["read_mb_s"], 12.5)
