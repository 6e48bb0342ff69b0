"""``python -m ltrlib ...``: the same as the ``ltrlib`` console script."""

import sys

from ltrlib.cli import main

sys.exit(main())
