"""A module that reads an import-time setting, like a service module reading its configuration."""

import os

SEEN_AT_IMPORT = os.environ.get("DYN_PARSER_VERSION")
IMPORTED_IN_PID = os.getpid()
