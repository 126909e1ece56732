"""`python -m lazyk`: the `lazyk` command (parse, explain, bench, cache)."""
import sys

from lazyk.cli import main

sys.exit(main())
