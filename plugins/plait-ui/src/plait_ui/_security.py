"""What keeps a web page on a developer's machine from being an attack surface.

- :func:`check_bind`: the server binds a loopback address unless the user said ``--host``.
- Starlette's ``TrustedHostMiddleware`` refuses a ``Host`` header outside the allow-list
  (DNS rebinding); :func:`allowed_hosts_for` makes the list.
- :class:`Guard`, an ASGI middleware in front of every route:
  - the random token of the printed URL is exchanged once, and only once, for an
    ``HttpOnly``, ``SameSite=Strict`` session cookie whose name is this server's own (two
    ``plait ui`` on one machine do not sign each other out), and a request without that
    cookie is refused;
  - a request that is not ``GET``/``HEAD`` must come from the server's own origin
    (``Origin`` is the ``Host`` it was sent to), and the route checks its CSRF token
    (:meth:`Guard.csrf_ok`);
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
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = [
    "COOKIE_PREFIX",
    "CSP",
    "BindError",
    "Guard",
    "allowed_hosts_for",
    "check_bind",
    "is_loopback",
    "new_token",
]

#: The start of the session cookie's name; the rest is random per server
#: (:attr:`Guard.cookie`): cookies are not kept apart by port, so every ``plait ui`` on a
#: machine would otherwise overwrite the others' sessions.
COOKIE_PREFIX = "plait_ui_session_"
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


def allowed_hosts_for(host: str) -> frozenset[str]:
    """The host names (``Host`` without its port) a server bound to ``host`` accepts: the
    loopback names, and ``host`` itself (for ``TrustedHostMiddleware``)."""
    names = {"127.0.0.1", "localhost", "[::1]"}
    if not is_loopback(host):
        names.add(f"[{host}]" if ":" in host else host)
    return frozenset(name.lower() for name in names)


class Guard:
    """The ASGI middleware that checks every request (see the module docstring), behind
    Starlette's ``TrustedHostMiddleware``.

    :param app: the app behind it.
    :param token: the token of the printed URL (good for one sign-in).
    :param allowed_hosts: the host names accepted (``Host`` without its port).
    """

    def __init__(self, app: ASGIApp, *, token: str, allowed_hosts: Iterable[str]) -> None:
        self.app = app
        # the Host is checked before anything else (the token is not spent on a bad one)
        self.trusted = TrustedHostMiddleware(self._checked, allowed_hosts=sorted(allowed_hosts))
        self.token: str | None = token
        # the cookie is not the token: a token seen in a shell history opens one session
        self.session = secrets.token_urlsafe(32)
        #: this server's session cookie's name
        self.cookie = COOKIE_PREFIX + secrets.token_hex(6)

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

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in _HEADERS.items():
                    headers[name] = value
            await send(message)

        await self.trusted(scope, receive, send_with_headers)

    async def _checked(self, scope: Scope, receive: Receive, send: Send) -> None:
        response = self._refusal(Request(scope))
        if response is not None:
            await response(scope, receive, send)
        else:
            await self.app(scope, receive, send)

    def _signed_in(self, request: Request) -> bool:
        cookie = request.cookies.get(self.cookie, "")
        return hmac.compare_digest(cookie.encode(), self.session.encode())

    def _refusal(self, request: Request) -> Response | None:
        token = request.query_params.get("token")
        if token is not None:
            rest = [(k, v) for k, v in request.query_params.multi_items() if k != "token"]
            target = URL(path=request.url.path, query=urlencode(rest))
            redirect = RedirectResponse(str(target), status_code=303)
            if self.token is not None and hmac.compare_digest(token.encode(), self.token.encode()):
                self.token = None  # one sign-in: a token seen later opens nothing
                redirect.set_cookie(
                    self.cookie, self.session, httponly=True, samesite="strict", path="/"
                )
                return redirect
            if self._signed_in(request):  # the printed URL opened again in this browser
                return redirect
            if self.token is None:
                return PlainTextResponse(
                    "this token was used already: it signs in once (restart plait ui for a "
                    "new one)",
                    status_code=403,
                )
            return PlainTextResponse("wrong token", status_code=403)
        if not self._signed_in(request):
            return PlainTextResponse(
                "not signed in: open the URL `plait ui` printed (it holds a token)",
                status_code=403,
            )
        if request.method not in _SAFE_METHODS:
            origin = request.headers.get("origin", "").lower()
            if origin != f"http://{request.headers.get('host', '')}".lower():
                return PlainTextResponse("cross-origin request refused", status_code=403)
        return None
