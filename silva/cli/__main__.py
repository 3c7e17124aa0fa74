"""``python -m silva.cli``: the ``silva`` command."""

import sys

from silva.cli import main

sys.exit(main())
