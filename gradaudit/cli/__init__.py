"""The command line: argv, exit codes, consoles and files; everything else is the audit service's.

Exit codes follow ruff, mypy and pytest: 0 every scenario passes (consistent, or as expected, or
known to the baseline), 1 findings, 2 bad input, usage or configuration, 3 internal error.
"""

from gradaudit.cli import commands as _commands  # noqa: F401 - registers the commands on main
from gradaudit.cli.app import main

__all__ = ["main"]
