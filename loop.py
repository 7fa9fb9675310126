#!/usr/bin/env python3
"""`python loop.py [options]` is `autoresearch run [options]`."""

import sys

from autoresearch.cli import main

if __name__ == "__main__":
    sys.exit(main(["run", *sys.argv[1:]]))
