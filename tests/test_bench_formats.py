"""The readers of other tools' output: each on output captured from the tool itself, and on
whatever output of its shape hypothesis makes up (names, units, repeats, noise lines)."""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from autoresearch.bench.metrics import read_run_metrics
from autoresearch.config import BenchConfig
from autoresearch.errors import MetricParseError
from autoresearch.readers.formats import FORMATS, NS_PER, detect, metric_name, read_format

CAPTURED = Path(__file__).parent / "fixtures" / "bench-formats"

# Benchmark names as the tools allow them: groups, parameters, spaces.
names = st.text(
    alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_/ -",
    min_size=1,
    max_size=40,
).filter(lambda s: metric_name(s) and s.strip() == s and "  " not in s)
values = st.floats(min_value=1e-3, max_value=1e9, allow_nan=False, allow_infinity=False)
time_units = st.sampled_from(["ps", "ns", "µs", "us", "ms", "s"])
settings.register_profile("readers", max_examples=60, deadline=None)
settings.load_profile("readers")


def close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


def distinct(benches: list, key=lambda b: b[0]) -> list:
    """One bench per metric name: two names that read alike would be one metric."""
    seen, out = set(), []
    for bench in benches:
        name = metric_name(key(bench))
        if name not in seen:
            seen.add(name)
            out.append(bench)
    return out


# -- made-up output of each shape ------------------------------------------------------------


@given(st.lists(st.tuples(names, values, time_units, st.booleans()), min_size=1, max_size=6))
# A long name that begins like criterion's own chatter is still a name.
@example(benches=[("Warning", 1.0, "ps", True), ("Found it", 2.0, "ns", True)])
def test_criterion_text_gives_each_estimate_in_nanoseconds(benches):
    benches = distinct(benches)
    lines = ["Benchmarking fib: Warming up for 3.0000 s", "Gnuplot not found, using plotters"]
    for name, value, unit, own_line in benches:
        bounds = f"[{value * 0.9:.4f} {unit} {value:.4f} {unit} {value * 1.1:.4f} {unit}]"
        if own_line:  # a long name: alone on its line, the numbers indented below it
            lines += [name, f"                        time:   {bounds}"]
        else:
            lines.append(f"{name:<24}time:   {bounds}")
        lines += [
            "                        change: [-1.2345% +0.5000% +2.1000%] (p = 0.59 > 0.05)",
            "                        No change in performance detected.",
            "Found 3 outliers among 100 measurements (3.00%)",
        ]
    got = read_format("criterion", "\n".join(lines) + "\n")
    assert "criterion" in detect("\n".join(lines))
    assert set(got) == {metric_name(n, "ns") for n, *_ in benches}
    for name, value, unit, _ in benches:
        assert close(got[metric_name(name, "ns")], float(f"{value:.4f}") * NS_PER[unit])


@given(st.lists(st.tuples(names, values, time_units), min_size=1, max_size=6))
def test_criterion_json_messages_give_the_typical_estimate(benches):
    benches = distinct(benches)
    messages = [{"reason": "group-complete", "group_name": "g", "benchmarks": []}]
    for name, value, unit in benches:
        estimate = {"estimate": value, "lower_bound": value, "upper_bound": value, "unit": unit}
        messages.append(
            {"reason": "benchmark-complete", "id": name, "typical": estimate, "mean": estimate}
        )
    text = "\n".join(json.dumps(m) for m in messages)
    assert detect(text) == ["criterion-json"]
    got = read_format("criterion-json", text)
    for name, value, unit in benches:
        assert close(got[metric_name(name, "ns")], value * NS_PER[unit])


@given(
    st.lists(
        st.tuples(names.map(lambda s: s.replace(" ", "_")), st.integers(1, 10**9)),
        min_size=1,
        max_size=6,
    )
)
def test_libtest_rows_with_thousands_separators(benches):
    benches = distinct(benches)
    lines = ["running 3 tests", "test tests::plain ... ignored"]
    lines += [f"test {n} ... bench:  {v:>12,} ns/iter (+/- {v // 10:,})" for n, v in benches]
    lines.append("test result: ok. 0 passed; 0 failed; 1 ignored; 2 measured")
    got = read_format("libtest", "\n".join(lines))
    assert got == {metric_name(n, "ns"): float(v) for n, v in benches}


@given(
    st.lists(
        st.tuples(st.one_of(st.none(), names), names, st.lists(values, min_size=1, max_size=3)),
        min_size=1,
        max_size=5,
    )
)
def test_pytest_benchmark_medians_in_nanoseconds(benches):
    benches = distinct(benches, key=lambda b: f"{b[0] or ''}_{b[1]}")
    rows = [
        {"group": group, "name": name, "stats": {"median": m, "mean": m * 2, "min": m / 2}}
        for group, name, medians in benches
        for m in medians  # the same test reported again (a rerun): its median counts
    ]
    text = json.dumps({"machine_info": {}, "commit_info": {}, "benchmarks": rows})
    assert detect(text) == ["pytest-benchmark"]
    got = read_format("pytest-benchmark", text)
    own = {metric_name(group or "", name, "ns") for group, name, _ in benches}
    for group, name, medians in benches:
        assert close(got[metric_name(group or "", name, "ns")], statistics.median(medians) * 1e9)
        # Its fastest round beside it (`min` in the rows above is half the median), unless a
        # benchmark of its own bears that name: a real benchmark's median is never replaced.
        fastest = metric_name(group or "", name, "min_ns")
        if fastest not in own:
            assert close(got[fastest], statistics.median(medians) * 1e9 / 2)


@given(st.lists(st.tuples(st.lists(names, max_size=2), names, values), min_size=1, max_size=6))
def test_vitest_medians_in_nanoseconds_named_by_their_describes(benches):
    benches = distinct(benches, key=lambda b: "_".join([*b[0], b[1]]))
    groups = {}
    for describes, name, median in benches:
        full = " > ".join(["src/a.bench.ts", *describes])
        groups.setdefault(full, []).append({"name": name, "median": median, "mean": median * 2})
    files = [{"filepath": "/p/src/a.bench.ts", "groups": [
        {"fullName": full, "benchmarks": rows} for full, rows in groups.items()
    ]}]  # fmt: skip
    text = json.dumps({"files": files})
    assert detect(text) == ["vitest"]
    got = read_format("vitest", text)
    for describes, name, median in benches:
        assert close(got[metric_name(*describes, name, "ns")], median * 1e6)


@given(st.lists(st.tuples(st.sampled_from(["", "parse", "encode"]), names, values), min_size=1))
def test_mitata_p50_named_by_its_group(benches):
    benches = distinct(benches, key=lambda b: f"{b[0]}_{b[1]}")
    layout = [{"name": None, "types": []}, {"name": "parse"}, {"name": "encode"}]
    rows = [
        {"alias": n, "group": ["", "parse", "encode"].index(g), "runs": [
            {"name": n, "stats": {"p50": v, "avg": v * 2}}]}
        for g, n, v in benches
    ]  # fmt: skip
    text = json.dumps({"layout": layout, "benchmarks": rows, "context": {"runtime": "node"}})
    assert detect(text) == ["mitata"]
    got = read_format("mitata", text)
    for group, name, value in benches:
        assert close(got[metric_name(group, name, "ns")], value)


@given(
    st.lists(
        st.tuples(names, st.lists(values, min_size=1, max_size=5), time_units.filter(bool)),
        min_size=1,
        max_size=5,
    )
)
def test_google_benchmark_repetitions_keep_their_median(benches):
    benches = distinct(benches)
    rows = []
    for name, times, unit in benches:
        rows += [
            {"name": name, "run_name": name, "run_type": "iteration", "iterations": 10,
             "real_time": t, "cpu_time": t / 2, "time_unit": unit, "items_per_second": 5.0}
            for t in times
        ]  # fmt: skip
        rows.append(
            {"name": f"{name}_median", "run_name": name, "run_type": "aggregate",
             "aggregate_name": "median", "real_time": -1.0, "cpu_time": -1.0, "time_unit": unit}
        )  # fmt: skip
    text = json.dumps({"context": {"library_build_type": "release"}, "benchmarks": rows})
    assert detect(text) == ["google-benchmark"]
    got = read_format("google-benchmark", text)
    for name, times, unit in benches:
        assert close(got[metric_name(name, "ns")], statistics.median(times) * NS_PER[unit])
        assert close(got[metric_name(name, "cpu_ns")], statistics.median(times) / 2 * NS_PER[unit])
        assert got[metric_name(name, "items_per_second")] == 5.0
        # Repeated, each timing's fastest repetition beside it; one run has no fastest of its own.
        fastest = got.get(metric_name(name, "min_ns"))
        assert fastest is None if len(times) == 1 else close(fastest, min(times) * NS_PER[unit])
        assert metric_name(name, "items_per_second_min") not in got


@given(st.lists(st.tuples(names, values), min_size=1, max_size=5), st.booleans())
def test_hyperfine_medians_named_by_command_and_parameters_where_needed(benches, scan):
    benches = distinct(benches)
    if scan:  # a parameter scan of one command name: told apart by the parameter
        benches = [(benches[0][0], v) for _, v in benches]
    results = [
        {"command": name, "mean": v * 2, "median": v, "parameters": {"size": str(i)}}
        for i, (name, v) in enumerate(benches)
    ]
    got = read_format("hyperfine", json.dumps({"results": results}))
    shared = scan and len(benches) > 1
    expected = {
        metric_name(name, *([str(i)] if shared else []), "ns"): v * 1e9
        for i, (name, v) in enumerate(benches)
    }
    assert got == pytest.approx(expected, rel=1e-12)


@given(
    st.lists(
        st.tuples(
            names.map(lambda s: s.replace("/", ".")),
            values,
            st.sampled_from(["ns/op", "us/op", "ms/op", "s/op", "ops/s", "ops/ms", "ops/us"]),
        ),
        min_size=1,
        max_size=5,
    )
)
def test_jmh_scores_in_nanoseconds_per_op_or_operations_per_second(benches):
    benches = distinct(benches, key=lambda b: ".".join(b[0].split(".")[-2:]))
    doc = [
        {"benchmark": f"org.example.{name}", "mode": "avgt", "params": {},
         "primaryMetric": {"score": score, "scoreUnit": unit}}
        for name, score, unit in benches
    ]  # fmt: skip
    text = json.dumps(doc)
    assert detect(text) == ["jmh"]
    got = read_format("jmh", text)
    for name, score, unit in benches:
        parts = f"org.example.{name}".split(".")[-2:]
        top, _, bottom = unit.partition("/")
        if top == "ops":
            assert close(got[metric_name(*parts, "ops_s")], score * 1e9 / NS_PER[bottom])
        else:
            assert close(got[metric_name(*parts, "ns_op")], score * NS_PER[top])


@given(
    st.lists(
        st.tuples(names, names, st.one_of(st.just(""), names), values, st.none() | st.integers(0)),
        min_size=1,
        max_size=5,
    )
)
@example(benches=[("0", "0", "", 1.0, 2**53 + 1)])  # more bytes than a float holds exactly
def test_benchmarkdotnet_medians_and_allocations(benches):
    """Its full JSON report (no .NET here to capture one: the shape its docs give)."""
    benches = distinct(benches, key=lambda b: f"{b[0]}_{b[1]}_{b[2]}")
    doc = {
        "Title": "Run",
        "Benchmarks": [
            {"Type": t, "Method": m, "Parameters": params, "FullName": f"{t}.{m}",
             "Statistics": {"Median": median, "Mean": median * 2},
             "Memory": {"BytesAllocatedPerOperation": allocated}}
            for t, m, params, median, allocated in benches
        ],
    }  # fmt: skip
    text = json.dumps(doc)
    assert detect(text) == ["benchmarkdotnet"]
    got = read_format("benchmarkdotnet", text)
    for t, m, params, median, allocated in benches:
        assert got[metric_name(t, m, params, "ns")] == median
        if allocated is not None:
            # Metrics are floats: a count past 2**53 is read as the float nearest it.
            assert got[metric_name(t, m, params, "bytes_op")] == float(allocated)


@given(st.dictionaries(names, st.dictionaries(names, values, min_size=1, max_size=3), min_size=1))
@example({"0": {"0": 1.0}, "Benchmarks": {"0": 1.0}})  # BenchmarkDotNet's key, as a benchmark
@example({"benchmarks": {"0": 1.0}, "context": {"0": 1.0}})  # Google Benchmark's keys
def test_bmf_each_measure_of_each_benchmark(doc):
    text = json.dumps({b: {m: {"value": v} for m, v in ms.items()} for b, ms in doc.items()})
    assert detect(text) == ["bmf"]
    got = read_format("bmf", text)
    expected = {metric_name(b, m): v for b, ms in doc.items() for m, v in ms.items()}
    if len(expected) == sum(len(ms) for ms in doc.values()):  # no two names read alike
        assert got == expected


def test_catch2_names_a_benchmark_by_its_test_case_where_two_share_a_name():
    case = '<TestCase name="{}"><BenchmarkResults name="push"><mean value="{}"/>'
    case += "</BenchmarkResults></TestCase>"
    text = f"<Catch2TestRun>{case.format('Vector', 10)}{case.format('Deque', 20)}</Catch2TestRun>"

    assert detect(text) == ["catch2"]
    assert read_format("catch2", text) == {"vector_push_ns": 10.0, "deque_push_ns": 20.0}


def test_an_xml_document_type_is_refused_not_expanded():
    """The bench's output is the candidate's: entities that expand a billion times are not
    read (no harness writes a document type)."""
    laughs = '<?xml version="1.0"?><!DOCTYPE l [<!ENTITY a "aaaaaaaaaa">'
    for inner, outer in zip("abcdefgh", "bcdefghi", strict=True):
        laughs += f'<!ENTITY {outer} "{("&" + inner + ";") * 10}">'
    laughs += ']><Catch><TestCase name="t"><BenchmarkResults name="&i;"><mean value="1"/>'
    laughs += "</BenchmarkResults></TestCase></Catch>"

    assert detect(laughs) == []
    with pytest.raises(MetricParseError, match="document type"):
        read_format("catch2", laughs)


def test_an_asv_benchmark_that_failed_is_left_out():
    columns = ["result", "params", "version"]
    results = {"b.time_x": [None, [], "v"], "b.time_y": [[None, 2.0], [["1", "2"]], "v"]}
    doc = {"result_columns": columns, "results": results}

    assert read_format("asv", json.dumps(doc)) == {"b_time_y_2_ns": 2e9}


@given(st.text(max_size=300))
def test_no_reader_dies_on_any_text(text):
    """Any output: each reader gives numbers or a MetricParseError, never another error."""
    for name in FORMATS:
        try:
            got = read_format(name, text)
        except MetricParseError:
            continue
        assert all(isinstance(v, float) and math.isfinite(v) for v in got.values())


# -- output captured from the tools themselves ------------------------------------------------


@pytest.mark.parametrize(
    ("fmt", "file", "expected"),
    [
        # cargo bench (criterion 0.5), run twice: the second run's change: blocks are not values
        (
            "criterion",
            "criterion.txt",
            {
                "fib_15_ns": 1394.6,  # [1.3912 µs 1.3946 µs 1.3985 µs]
                "a_rather_long_benchmark_name_fib_12_ns": 328.94,  # the name on its own line
                "fibonacci_recursive_20_ns": 15649.0,
                "fibonacci_recursive_20_melem_s": 1.2780,
            },
        ),
        # cargo criterion --message-format=json (cargo-criterion 1.1): the typical estimates
        (
            "criterion-json",
            "criterion.jsonl",
            {"fib_15_ns": 1391.4002286966527, "fibonacci_recursive_20_ns": 15762.80131065833},
        ),
        # RUSTC_BOOTSTRAP=1 cargo bench with #[bench] (Rust 1.95)
        ("libtest", "libtest.txt", {"bench_fib_10_ns": 143.53, "bench_fib_20_ns": 17790.63}),
        # pytest --benchmark-json (pytest-benchmark 5.3): the medians, in seconds there
        (
            "pytest-benchmark",
            "pytest-benchmark.json",
            {
                "test_fib_10_ns": 7049.9991124961525,
                "sorting_test_sort_ns": 4687.00091005303,
                "test_fib_10_min_ns": 6819.9988163542,  # its fastest round
            },
        ),
        # --benchmark_format=json --benchmark_repetitions=3 (Debian's libbenchmark 1.7)
        ("google-benchmark", "google-benchmark.json", {"bm_fib_10_ns": 72.38187287799002}),
        # hyperfine 1.15 --export-json: named commands, and a parameter scan
        (
            "hyperfine",
            "hyperfine.json",
            {"sort_ns": 3859831.0, "seq_ns": 3707754.0, "sort_min_ns": 960351.0},
        ),
        ("hyperfine", "hyperfine-params.json", {"seq_1000_ns": 826211.0}),
        # JMH 1.37 -rf json: average time and throughput modes, a @Param
        (
            "jmh",
            "jmh.json",
            {
                "fib_recursive_n_20_ns_op": 23014.16476382598,
                "fib_throughput_n_10_ops_s": 6648845.9993,
            },
        ),
        # vitest 4.1 bench --outputJson: medians in milliseconds there; describe() groups
        (
            "vitest",
            "vitest.json",
            {
                "top_level_ns": 530.9999999099091,
                "fib_fib_15_ns": 5407.999999988533,
                "fib_fib_20_ns": 59757.99999998799,
                "top_level_min_ns": 519.9999998239946,
            },
        ),
        # mitata 1.0 run({ format: "json" }) (its samples cut to five): p50 in nanoseconds
        (
            "mitata",
            "mitata.json",
            {"fib_15_ns": 8623.0, "g_fib_10_ns": 656.4482421875, "fib_15_min_ns": 5898.0},
        ),
        # asv 0.6.6 run --python=same --quick: its results file (a timing, a parameterized
        # timing, memory in bytes, a track in its own unit), seconds there
        (
            "asv",
            "asv.json",
            {
                "bench_demo_timesuite_time_keys_ns": 8662.995242048055,
                "bench_demo_time_sum_100_ns": 3074.994310736656,
                "bench_demo_time_sum_1000_ns": 14242.003089748323,
                "bench_demo_timesuite_mem_list_bytes": 8056.0,
                "bench_demo_track_answer": 42.0,
            },
        ),
        # Catch2 2.13 --reporter xml, BENCHMARK in two test cases: means in nanoseconds
        (
            "catch2",
            "catch2.xml",
            {"fib_20_ns": 7572.89, "fib_25_ns": 114554.0, "push_1000_ns": 982.587},
        ),
    ],
)
def test_captured_output_of_each_tool(fmt, file, expected):
    text = (CAPTURED / file).read_text()
    assert detect(text) == [fmt] or fmt in ("criterion", "libtest"), detect(text)
    got = read_format(fmt, text)
    assert got and all(math.isfinite(v) and v > 0 for v in got.values())
    for name, value in expected.items():
        assert got[name] == pytest.approx(value, rel=1e-9), name
    assert set(expected) <= set(got)


# -- how a run is read -------------------------------------------------------------------------


def test_a_run_with_metric_lines_is_read_for_those_alone_unless_a_format_is_named(tmp_path):
    text = "METRIC t_ms=5\ntest fib ... bench:  1,200 ns/iter (+/- 3)\n"
    assert read_run_metrics(BenchConfig(), text, tmp_path, "log") == {"t_ms": 5.0}
    named = read_run_metrics(BenchConfig(format="libtest"), text, tmp_path, "log")
    assert named == {"t_ms": 5.0, "fib_ns": 1200.0}
    plain = "test fib ... bench:  1,200 ns/iter (+/- 3)\n"
    assert read_run_metrics(BenchConfig(), plain, tmp_path, "log") == {"fib_ns": 1200.0}


def test_the_output_file_is_read_and_must_be_there(tmp_path):
    bench = BenchConfig(output="out/bench.json")
    with pytest.raises(MetricParseError, match=r"wrote no out/bench\.json"):
        read_run_metrics(bench, "", tmp_path, "run.log")
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "bench.json").write_text(json.dumps({"fib": {"latency": {"value": 3}}}))
    assert read_run_metrics(bench, "METRIC x=1\n", tmp_path, "run.log") == {
        "fib_latency": 3.0,
        "x": 1.0,
    }
    (tmp_path / "out" / "bench.json").write_text("all good, no numbers\n")
    with pytest.raises(MetricParseError, match="no benchmark format recognised"):
        read_run_metrics(bench, "", tmp_path, "run.log")
    with pytest.raises(MetricParseError, match="not jmh output"):
        read_run_metrics(BenchConfig(format="jmh", output="out/bench.json"), "", tmp_path, "l")


def test_a_run_that_writes_no_output_file_never_reads_the_last_one(target, tmp_path):
    """The file is removed before each run: a run that fails to write it fails, rather than
    passing off the earlier run's numbers as its own."""
    from dataclasses import replace

    from autoresearch.bench.measure import Harness
    from autoresearch.bench.proc import read_log

    once = tmp_path / "wrote-once"
    script = target.root / "writes-once.sh"
    script.write_text(
        f"#!/usr/bin/env bash\n[ -e {once} ] && exit 0\ntouch {once}\n"
        'echo \'{"fib": {"latency": {"value": 7}}}\' > out.json\n'
    )
    script.chmod(0o755)
    config = target.load()
    config = replace(
        config, bench=replace(config.bench, command="./writes-once.sh", output="out.json")
    )
    harness = Harness(config, env={}, stop=None)

    def one_run(n: int) -> dict:
        run = harness.bench(target.root, tmp_path / f"run{n}.log")
        assert run.exit_code == 0
        return read_run_metrics(config.bench, read_log(run.log_path), target.root, run.log_path)

    assert one_run(1) == {"fib_latency": 7.0}
    with pytest.raises(MetricParseError, match=r"wrote no out\.json"):
        one_run(2)
