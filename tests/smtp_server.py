"""A mail server on 127.0.0.1 (aiosmtpd) that keeps what Mesh mails, and can require a login."""

from __future__ import annotations

import socket
from email import message_from_bytes, policy
from email.message import EmailMessage

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Mailbox:
    """Serve SMTP on ``port`` (a free one by default) until ``stop()``; ``login``: the only (user, password)
    it accepts (None: no login)."""

    def __init__(self, port: int | None = None, login: tuple[str, str] | None = None) -> None:
        self.messages: list[EmailMessage] = []
        self.port = port or free_port()
        self._login = login
        options = {"auth_require_tls": False, "authenticator": self._authenticate} if login else {}
        self._controller = Controller(self, hostname="127.0.0.1", port=self.port, **options)
        self._controller.start()
        self._running = True

    def _authenticate(self, _server, _session, _envelope, _mechanism, data) -> AuthResult:
        given = (data.login.decode(), data.password.decode()) if isinstance(data, LoginPassword) else None
        return AuthResult(success=given == self._login)

    async def handle_DATA(self, _server, _session, envelope) -> str:
        self.messages.append(message_from_bytes(envelope.content, policy=policy.default))  # type: ignore[arg-type]
        return "250 OK"

    def stop(self) -> None:
        """Stop serving (again: nothing), as a mail server that went down."""
        if self._running:
            self._controller.stop()
            self._running = False
