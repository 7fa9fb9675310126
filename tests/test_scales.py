"""Sizes in metric names: the names people write and the ones `go test -bench` produces."""

from __future__ import annotations

import pytest

from autoresearch.bench.metrics import parse_go_bench
from autoresearch.report.scales import scale_parts, scale_value

GO_OUTPUT = """\
BenchmarkSum64/4B-8         	1000000000	         4.828 ns/op	 828.48 MB/s
BenchmarkSum64/16B-8        	500000000	         6.123 ns/op	2613.10 MB/s
BenchmarkSum64/100B-8       	100000000	        12.41 ns/op	8058.02 MB/s
BenchmarkGet/1KiB-8         	 2000000	       612.0 ns/op
BenchmarkGet/64KiB-8        	   50000	     24012 ns/op
BenchmarkWritePack/100k-2   	       1	 81234567 ns/op
BenchmarkWritePack/1m-2     	       1	912345678 ns/op
"""


@pytest.mark.parametrize(
    ("name", "parts"),
    [
        ("sum64_4b_ns_op", ("sum64_", "4b", "_ns_op")),
        ("writepack_100k_ns_op", ("writepack_", "100k", "_ns_op")),
        ("get_1kib_ns_op", ("get_", "1kib", "_ns_op")),
        ("parse_16B_mb_s", ("parse_", "16B", "_mb_s")),
        ("pebble_writepack_100k_ms", ("pebble_writepack_", "100k", "_ms")),
        ("copy_2.5MiB_ms", ("copy_", "2.5MiB", "_ms")),
        ("latency_p99_ms", None),
        ("sum64", None),
    ],
)
def test_the_size_in_a_name(name, parts):
    assert scale_parts(name) == parts
    if parts:
        assert "".join(parts) == name


def test_go_bench_names_form_families_ordered_by_size():
    names = parse_go_bench(GO_OUTPUT)
    families: dict[tuple[str, str], list[str]] = {}
    for name in names:
        split = scale_parts(name)
        if split:
            families.setdefault((split[0], split[2]), []).append(split[1])
    sizes = {key: sorted(v, key=scale_value) for key, v in families.items()}
    assert sizes[("sum64_", "_ns_op")] == ["4b", "16b", "100b"]
    assert sizes[("sum64_", "_mb_s")] == ["4b", "16b", "100b"]
    assert sizes[("get_", "_ns_op")] == ["1kib", "64kib"]
    assert sizes[("writepack_", "_ns_op")] == ["100k", "1m"]


def test_sizes_order_by_value():
    assert sorted(["1m", "10k", "100", "1kib", "2g"], key=scale_value) == [
        "100",
        "1kib",
        "10k",
        "1m",
        "2g",
    ]
    assert scale_value("1KiB") == 1024 and scale_value("4B") == 4
