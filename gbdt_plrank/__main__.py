"""``python -m gbdt_plrank``: the command line (see :mod:`gbdt_plrank.cli`)."""

import sys

from .cli import main

sys.exit(main())
