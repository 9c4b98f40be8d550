"""`python -m buildtool` runs the same command line as the `buildtool` script."""

import sys

from buildtool.cli import main

sys.exit(main())
