"""End-to-end tests: a real server process over HTTP."""

import sys
from pathlib import Path

# the generated clients (clients/python), as a user of the checkout imports them
_CLIENTS = str(Path(__file__).resolve().parents[2] / "clients" / "python")
if _CLIENTS not in sys.path:
    sys.path.insert(0, _CLIENTS)
