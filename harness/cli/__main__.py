"""`python -m harness.cli`: the command again, inside the --harness-memory box."""

import sys

from harness.cli.main import main

sys.exit(main())
