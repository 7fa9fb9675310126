"""What every command shares: the config it reads, the options it takes, exit codes."""

from __future__ import annotations

import argparse
import dataclasses
import re
from collections.abc import Callable
from pathlib import Path

from ..config import Config, check_session_name, find_config, load_config

EXIT_USER_ERROR = 1
EXIT_FAILED = 3  # the command ran, but what it ran did not end well (e.g. interrupted)


def config_of(args: argparse.Namespace) -> Config:
    path = Path(args.config) if args.config else find_config(Path.cwd())
    config = load_config(path)
    if getattr(args, "session", None):
        config = dataclasses.replace(
            config,
            session=dataclasses.replace(
                config.session, name=check_session_name(args.session, "--session")
            ),
        )
    return config


def add_config_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--config",
        metavar="PATH",
        help="session config (default: ./autoresearch.toml, or [tool.autoresearch] in "
        "./pyproject.toml)",
    )
    parser.add_argument(
        "--session",
        metavar="NAME",
        help="session name, overriding [session] name: a new name starts a new session",
    )


def add_env_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--env",
        type=key_value,
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="environment for the bench and checks (repeatable)",
    )


def key_value(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got '{text}'")
    return key, value


def doc(func: Callable[..., object]) -> str:
    """A command's one-line help: the first sentence of its docstring, whole, however many
    lines it spans (a cut line would end mid-sentence in `--help`)."""
    paragraph = (func.__doc__ or "").strip().split("\n\n")[0]
    text = " ".join(paragraph.split())
    end = re.search(r"\.(\s|$)", text)
    return text[: end.start() + 1] if end else text
