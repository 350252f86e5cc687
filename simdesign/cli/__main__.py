"""``python -m simdesign.cli``: the ``simdesign`` command."""
import sys

from simdesign.cli.main import main

sys.exit(main())
