"""``python -m pytest_diffperf.refserver``."""

import sys

from .cli import main

sys.exit(main())
