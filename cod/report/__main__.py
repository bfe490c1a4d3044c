"""`python -m cod.report [--check]`: the docs writer's command line (`cod.report.docs`)."""

import sys

from cod.report.docs import main

sys.exit(main())
