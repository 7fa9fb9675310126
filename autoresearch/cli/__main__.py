"""`python -m autoresearch.cli` is the `autoresearch` command."""

import sys

from . import main

sys.exit(main())
