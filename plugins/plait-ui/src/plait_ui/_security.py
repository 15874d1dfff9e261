"""What keeps a web page on a developer's machine from being an attack surface.

- :func:`check_bind`: the server binds a loopback address unless the user said ``--host``.
- :class:`Guard`, an ASGI middleware in front of every route:
  - a ``Host`` header outside the allow-list is refused (DNS rebinding);
  - the random token of the printed URL is exchanged once for an ``HttpOnly``,
    ``SameSite=Strict`` session cookie, and a request without that cookie is refused;
  - a request that is not ``GET``/``HEAD`` must come from the server's own origin
    (``Origin`` header), and the route checks its CSRF token (:meth:`Guard.csrf_ok`);
  - every response carries ``Content-Security-Policy: default-src 'self'`` and friends.

Jinja2 autoescaping (in :mod:`plait_ui._app`) escapes everything a store holds.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import secrets
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlencode

from plait import PlaitError
from starlette.datastructures import URL, MutableHeaders
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = [
    "COOKIE",
    "CSP",
    "BindError",
    "Guard",
    "allowed_hosts_for",
    "check_bind",
    "is_loopback",
    "new_token",
]

#: The session cookie's name.
COOKIE = "plait_ui_session"
#: The content security policy of every response: nothing but this origin, no inline code.
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'"
)
_HEADERS = {
    "content-security-policy": CSP,
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    # same-origin, not no-referrer: under no-referrer a browser sends "Origin: null" on a
    # form POST, which the origin check would refuse
    "referrer-policy": "same-origin",
    "cross-origin-opener-policy": "same-origin",
    "cross-origin-resource-policy": "same-origin",
}
_SAFE_METHODS = frozenset({"GET", "HEAD"})


class BindError(PlaitError):
    """``plait ui`` was asked to listen on an address other machines can reach without
    ``--host`` saying so.
    """


def new_token() -> str:
    """A fresh random token (256 bits, URL-safe)."""
    return secrets.token_urlsafe(32)


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an address or ``localhost``) is this machine only."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_bind(host: str, *, explicit: bool) -> str | None:
    """Whether the server may bind ``host``; returns the warning to print, if any.

    A loopback address is always allowed. Any other (``0.0.0.0``, a LAN address, a name)
    needs ``explicit`` (``--host`` given on the command line), and comes with a warning.

    :raises BindError: ``host`` is not a loopback address and ``explicit`` is false.
    """
    if is_loopback(host):
        return None
    if not explicit:
        raise BindError(
            f"refusing to listen on {host!r}, which other machines can reach: "
            "plait ui binds 127.0.0.1 unless you pass --host"
        )
    return (
        f"warning: plait ui listens on {host}: anyone who can reach it and learns the "
        "token in the URL can read every run in the store"
    )


def allowed_hosts_for(host: str, port: int) -> frozenset[str]:
    """The ``Host`` header values a server bound to ``host``:``port`` accepts."""
    names = {"127.0.0.1", "localhost", "[::1]"}
    if not is_loopback(host):
        names.add(f"[{host}]" if ":" in host else host)
    return frozenset(f"{name}:{port}".lower() for name in names)


class Guard:
    """The ASGI middleware that checks every request (see the module docstring).

    :param app: the app behind it.
    :param token: the token of the printed URL.
    :param allowed_hosts: the ``Host`` header values accepted (``host:port``).
    """

    def __init__(self, app: ASGIApp, *, token: str, allowed_hosts: Iterable[str]) -> None:
        self.app = app
        self.token = token
        self.allowed_hosts = frozenset(h.lower() for h in allowed_hosts)
        self.origins = frozenset(f"http://{h}" for h in self.allowed_hosts)
        # the cookie is not the token: a token seen in a shell history opens one session
        self.session = secrets.token_urlsafe(32)

    def csrf_token(self) -> str:
        """The CSRF token forms of this session carry."""
        return hmac.new(self.session.encode(), b"csrf", hashlib.sha256).hexdigest()

    def csrf_ok(self, value: Any) -> bool:
        """Whether ``value`` (a form field) is this session's CSRF token."""
        return isinstance(value, str) and hmac.compare_digest(value, self.csrf_token())

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        response = self._refusal(Request(scope))

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in _HEADERS.items():
                    headers[name] = value
            await send(message)

        if response is not None:
            await response(scope, receive, send_with_headers)
        else:
            await self.app(scope, receive, send_with_headers)

    def _refusal(self, request: Request) -> Response | None:
        host = request.headers.get("host", "").lower()
        if host not in self.allowed_hosts:
            return PlainTextResponse("unexpected Host header", status_code=400)
        token = request.query_params.get("token")
        if token is not None:
            if not hmac.compare_digest(token.encode(), self.token.encode()):
                return PlainTextResponse("wrong token", status_code=403)
            rest = [(k, v) for k, v in request.query_params.multi_items() if k != "token"]
            target = URL(path=request.url.path, query=urlencode(rest))
            redirect = RedirectResponse(str(target), status_code=303)
            redirect.set_cookie(COOKIE, self.session, httponly=True, samesite="strict", path="/")
            return redirect
        cookie = request.cookies.get(COOKIE, "")
        if not hmac.compare_digest(cookie.encode(), self.session.encode()):
            return PlainTextResponse(
                "not signed in: open the URL `plait ui` printed (it holds a token)",
                status_code=403,
            )
        if request.method not in _SAFE_METHODS:
            origin = request.headers.get("origin", "").lower()
            if origin not in self.origins:
                return PlainTextResponse("cross-origin request refused", status_code=403)
        return None
