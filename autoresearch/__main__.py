"""`python -m autoresearch` is the `autoresearch` command."""

import sys

from .cli import main

sys.exit(main())
