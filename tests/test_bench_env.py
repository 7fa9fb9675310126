"""What a target's command gets of the loop's environment: the toolchains', the config's and
what `[bench] pass_env` names; never the loop's secrets, nor which arm or phase it runs in."""

from __future__ import annotations

import pytest
from conftest import experiments, run

from autoresearch.bench.environ import bench_environ

SECRETS = {
    "AWS_SECRET_ACCESS_KEY": "hunter2-aws",
    "GITHUB_TOKEN": "hunter2-github",
    "ANTHROPIC_API_KEY": "hunter2-anthropic",
    "CARGO_REGISTRY_TOKEN": "hunter2-cargo",  # a toolchain's prefix, a secret's name
    "GOOGLE_APPLICATION_CREDENTIALS": "/hunter2/gcloud.json",  # GO..., not Go's
    "npm_config__authToken": "hunter2-npm",
}


def _files_holding(root, needle: bytes) -> list[str]:
    return [
        str(path)
        for path in root.rglob("*")
        if path.is_file() and not path.is_symlink() and needle in path.read_bytes()
    ]


@pytest.mark.e2e
@pytest.mark.parametrize("sandbox", ["off", "auto"])
def test_a_candidate_that_prints_its_environment_finds_no_secret_of_the_loop(
    target, monkeypatch, sandbox
):
    target.configure(sandbox=sandbox)
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("GOFLAGS", "-count=1")  # a toolchain's own: passed
    monkeypatch.setenv("BENCH_LABEL", "named-by-pass-env")  # `pass_env = ["BENCH_*"]`
    target.add_hypothesis("01-leak", {"src/mode.txt": "tamper-environ\n"})

    run(target)

    (record,) = experiments(target)
    assert record.status == "discard", record.error
    for value in SECRETS.values():
        assert _files_holding(target.root, value.encode()) == [], value
    printed = "\n".join(
        path.read_text(errors="replace")
        for path in target.root.rglob("*.log")
        if "GOFLAGS=" in path.read_text(errors="replace")
    )
    assert "GOFLAGS=-count=1" in printed
    assert "BENCH_LABEL=named-by-pass-env" in printed
    assert "AUTORESEARCH_SESSION=t" in printed
    # Nothing tells a run whether it is the calibration, the experiment or the confirmation.
    assert "AUTORESEARCH_EXPERIMENT" not in printed


def test_the_allow_list_passes_toolchains_and_named_variables(monkeypatch):
    passed = {
        "PATH": "/usr/bin",
        "LC_ALL": "C.UTF-8",
        "GOPATH": "/go",
        "GO111MODULE": "on",
        "CARGO_HOME": "/cargo",
        "GRANTBENCH_SCALES": "1k",
    }
    for name, value in {**passed, **SECRETS, "MY_SETTING": "x"}.items():
        monkeypatch.setenv(name, value)

    got = bench_environ(["GRANTBENCH_*", "GITHUB_TOKEN"])

    assert {k: got.get(k) for k in passed} == passed
    assert "MY_SETTING" not in got  # neither a toolchain's nor named
    assert got["GITHUB_TOKEN"] == "hunter2-github"  # named: the user's choice
    assert not set(SECRETS) - {"GITHUB_TOKEN"} & set(got)
