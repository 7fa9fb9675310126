"""Config loading: every mistake names the file and the key."""

from pathlib import Path

import pytest

from autoresearch.config import find_config, load_config
from autoresearch.errors import ConfigError

MINIMAL = '[metric]\nname = "t_ms"\n'


def write(tmp_path: Path, text: str, name: str = "autoresearch.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_minimal_config_has_defaults(tmp_path):
    config = load_config(write(tmp_path, MINIMAL))
    assert config.metric.name == "t_ms" and config.metric.direction == "lower"
    assert config.decision.schedule() == [2, 3, 4, 5, 6, 9, 12, 16, 21, 28]
    assert config.checks.when == "keep"
    assert config.repo_path == tmp_path.resolve()
    assert config.branch == "autoresearch/main"
    assert config.state_path is None


def test_protected_globs_include_the_harness(tmp_path):
    text = MINIMAL + '[bench]\ncommand = "bash tools/bench.sh --fast"\n'
    text += '[scope]\nprotect = ["schema/*.proto"]\n'
    globs = load_config(write(tmp_path, text)).protected_globs()
    for expected in ("tools/bench.sh", "autoresearch.checks.sh", "**/go.mod", "schema/*.proto"):
        assert expected in globs


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (MINIMAL + "[bench]\nrunz = 3\n", "unknown key 'bench.runz'"),
        ("colour = 1\n" + MINIMAL, "unknown key 'colour'"),
        (MINIMAL + '[decision]\nmin_runs = "3"\n', "'decision.min_runs' must be int, got string"),
        (MINIMAL + "[decision]\nmin_runs = 30\n", "'decision.min_runs' must be >= 2 and <="),
        (MINIMAL + "[decision]\nlooks = 0\n", "'decision.looks' must be > 0"),
        (MINIMAL + "[decision]\nalpha = 0.7\n", "'decision.alpha' must be between 0 and 0.5"),
        (MINIMAL + '[decision]\nagree_with = ["x"]\n', "'decision.agree_with[0]' names 'x'"),
        (MINIMAL + "[bench]\ncalibration_runs = 1\n", "'bench.calibration_runs' must be >= 4"),
        (
            MINIMAL + '[bench]\nsentinel_command = "./b.sh s"\n',
            "'bench.sentinel_command' is set but no [[sentinel]]",
        ),
        (MINIMAL + '[checks]\nwhen = "sometimes"\n', "'checks.when' must be one of"),
        (MINIMAL + '[scope]\ninclude = "src"\n', "'scope.include' must be a list"),
        (MINIMAL + "[scope]\ninclude = [1]\n", "'scope.include[0]' must be str"),
        (MINIMAL + '[[sentinel]]\nname = "s"\n', "missing required key 'sentinel[0].budget_pct'"),
        (
            '[metric]\nname = "x"\ndirection = "down"\n',
            "'metric.direction' must be one of lower, higher, got 'down'",
        ),
        (
            MINIMAL + "[bench]\naggregate = 1\n",
            "'bench.aggregate' must be one of best, median, got integer",
        ),
        ("[bench]\nruns = 3\n", "missing [metric] section"),
        ("[metric\n", "not valid TOML"),
        (MINIMAL + "[bench]\nenv = { A = 1 }\n", "'bench.env' must be a table of strings"),
        (MINIMAL + "[budget]\nmax_hours = true\n", "'budget.max_hours' must be float, got boolean"),
        # Values the OS or the arithmetic would refuse far from the config: named here instead.
        (MINIMAL + '[target]\nbase = "main\\u0000"\n', "'target.base' holds a NUL byte"),
        (MINIMAL + '[bench]\ncommand = "./b.sh\\u0000"\n', "'bench.command' holds a NUL"),
        (MINIMAL + '[bench]\nbuild = "make\\u0000"\n', "'bench.build' holds a NUL byte"),
        (MINIMAL + '[bench]\ncpus = "0\\u0000"\n', "'bench.cpus' holds a NUL byte"),
        (MINIMAL + '[checks]\ncommand = "t\\u0000"\n', "'checks.command' holds a NUL byte"),
        (MINIMAL + '[bench]\nenv = { A = "x\\u0000" }\n', "'bench.env.A' holds a NUL byte"),
        (
            MINIMAL + '[[proposer]]\nkind = "queue"\ndir = "h\\u0000"\n',
            "'proposer[0].dir' holds a NUL byte",
        ),
        (
            MINIMAL + '[bench]\nenv = { "A=B" = "1" }\n',
            "'bench.env': 'A=B' is not an environment variable's name",
        ),
        (
            MINIMAL + '[checks]\nenv = { "=x" = "1" }\n',
            "'checks.env': '=x' is not an environment variable's name",
        ),
        (
            MINIMAL + "[decision]\ntarget_effect_pct = 1e308\n",
            "'decision.target_effect_pct' must be > 0 and < 100, got 1e+308",
        ),
        (
            MINIMAL + "[decision]\nmin_effect_pct = 100\n",
            "'decision.min_effect_pct' must be >= 0 and < 100",
        ),
        (MINIMAL + "[decision]\nbudget_s = 1e308\n", "'decision.budget_s' is too large"),
        (MINIMAL + "[budget]\nmax_hours = 1e300\n", "'budget.max_hours' is too large"),
        (MINIMAL + "[bench]\ntimeout_s = 1e300\n", "'bench.timeout_s' is too large"),
        (
            MINIMAL + "[decision]\nlooks = 4611686018427387904\n",
            "'decision.looks' must be <= 'decision.max_runs'",
        ),
    ],
)
def test_errors_name_file_and_key(tmp_path, text, message):
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert str(caught.value).startswith(f"{path.resolve()}: ")
    assert message in str(caught.value)


def test_pyproject_section(tmp_path):
    write(
        tmp_path,
        '[project]\nname = "x"\n\n[tool.autoresearch.metric]\nname = "p_ms"\n',
        "pyproject.toml",
    )
    config = load_config(find_config(tmp_path))
    assert config.metric.name == "p_ms"


def test_find_config_explains_what_to_do(tmp_path):
    write(tmp_path, '[project]\nname = "x"\n', "pyproject.toml")
    with pytest.raises(ConfigError, match="run `autoresearch init`"):
        find_config(tmp_path)
