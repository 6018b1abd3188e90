"""Session fixtures whose servers stop after the last test that uses them rather than at the session's end.

A session fixture that starts servers (a deployment's daemon, webserver and code servers; a Spark cluster; an S3
server) stays up until its worker's session ends, minutes after the last test that needs it: an idle
deployment's daemon and code servers alone kept a tenth of a core busy for the rest of the suite. Such a
fixture enters its servers into :func:`until_last_use`; ``tests/conftest.py`` closes that stack after the last
test of the session's order that uses the fixture (a worker of ``make test`` runs a group of
``SHARING_SESSION_FIXTURES`` in that order, one file after another).
"""

from __future__ import annotations

from contextlib import ExitStack

RELEASED_AFTER_LAST_USE: dict[str, ExitStack] = {}
"""The servers of session fixtures, by fixture name."""


def until_last_use(name: str) -> ExitStack:
    """The stack that the session fixture ``name`` enters its servers into: closed after the last test that uses
    ``name``, and by the fixture's own exit at the session's end whatever happened (closing twice does nothing)."""
    return RELEASED_AFTER_LAST_USE.setdefault(name, ExitStack())
