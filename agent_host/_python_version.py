"""Refuses to load on a Python older than the package supports, with one clear line instead of a SyntaxError.

Imported first by the package, so it must itself run on old Pythons: no syntax or library newer than Python 3.6.
"""

import sys

SUPPORTED = "3.11, 3.12 and 3.13"
OLDEST = (3, 11)

if sys.version_info < OLDEST:
    _MESSAGE = "agent-host needs Python {} or newer ({} are supported); this is Python {} ({}).".format(
        ".".join(str(part) for part in OLDEST),
        SUPPORTED,
        ".".join(str(part) for part in sys.version_info[:3]),
        sys.executable,
    )
    # Under `python -m agent_host`, argv[0] is "-m" while the package is imported: exit with the line alone.
    if sys.argv[:1] == ["-m"]:
        raise SystemExit("python -m agent_host: " + _MESSAGE)
    raise ImportError(_MESSAGE)
