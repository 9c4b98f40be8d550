"""`python -m sidecar ENGINE ...`."""

import sys

from sidecar.cli import main

sys.exit(main())
