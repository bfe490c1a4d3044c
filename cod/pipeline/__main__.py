"""`python -m cod.pipeline <stages>`: the stage runner's command line (`cod.pipeline.runner`)."""

import sys

from cod.pipeline.runner import main

sys.exit(main())
