"""The ``http`` executor kind: send the message as JSON, send the answer on.

Each message is one request made with :class:`httpx.AsyncClient` (imported on first use),
always with a timeout. An answer outside 2xx fails with
:class:`~plait_executors.errors.HttpStatusError` naming the status and the URL.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from plait import ConfigError, Executor, WorkflowContext
from plait.spi import BuildContext, Handler, outside_call
from plait_documents import Capability, check_config, network

from .errors import (
    HttpRequestError,
    HttpResponseError,
    HttpStatusError,
    HttpTimeoutError,
)

__all__ = ["HttpExecutor", "HttpKind"]

DEFAULT_TIMEOUT = 30.0
METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")
#: methods whose requests carry the message as their body unless ``body`` says otherwise
_WITH_BODY = frozenset({"POST", "PUT", "PATCH"})
#: how much of an error answer's body a failure quotes
BODY_TAIL = 500


class HttpExecutor(Executor):
    """Makes one request per message; sends the decoded answer on.

    :param id: the executor id.
    :param url: the URL (``http://`` or ``https://``).
    :param method: the HTTP method (default ``POST``).
    :param headers: extra request headers.
    :param timeout: seconds for the whole request (connect, send, wait, read).
    :param body: ``"message"`` sends the message as a JSON body (the default for POST, PUT
        and PATCH); ``"none"`` sends no body (the default for GET and DELETE).
    :param response: ``"json"`` sends the parsed JSON answer on; ``"text"`` its text.

    The request limit is kept as ``request_timeout``; ``timeout`` stays the kernel's
    per-invocation policy.
    """

    def __init__(
        self,
        id: str,
        url: str,
        *,
        method: str = "POST",
        headers: Mapping[str, str] | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        body: str | None = None,
        response: str = "json",
    ) -> None:
        method = method.upper()
        if method not in METHODS:
            raise ValueError(f"executor {id!r}: method must be one of {', '.join(METHODS)}")
        if response not in ("json", "text"):
            raise ValueError(f"executor {id!r}: response must be json or text")
        self.url = url
        self.method = method
        self.headers = dict(headers or {})
        self.request_timeout = timeout
        self.body = body or ("message" if method in _WITH_BODY else "none")
        self.response = response
        super().__init__(id)

    def declare_handlers(self) -> tuple[Handler, ...]:
        """One handler: any message in, the answer (text or JSON, as ``response`` says) out."""
        sends = str if self.response == "text" else Any
        return (Handler(f"http:{self.method} {self.url}", Any, (sends,), (), self._handle),)

    async def _handle(self, message: Any, ctx: WorkflowContext[Any, Any]) -> None:
        # through the outside-call seam: a recorded run keeps the answer, a replay gives it
        # (the headers by name: their values may be credentials, never written to a record)
        request = {"method": self.method, "url": self.url, "headers": sorted(self.headers)}
        if self.body == "message":
            request["body"] = message
        answer = await outside_call("http", request, lambda _request: self.request(message))
        await ctx.send_message(answer)

    async def request(self, message: Any = None) -> Any:
        """Make the request for ``message``; return the decoded answer.

        :raises HttpStatusError: the status is not 2xx.
        :raises HttpTimeoutError: no complete answer within ``timeout``.
        :raises HttpRequestError: the request could not be made.
        :raises HttpResponseError: a JSON answer was expected and the body is not JSON.
        """
        import httpx

        content = self._encode(message) if self.body == "message" else None
        headers = dict(self.headers)
        if content is not None:
            headers.setdefault("content-type", "application/json")
        if self.response == "json":
            headers.setdefault("accept", "application/json")
        try:
            async with httpx.AsyncClient(timeout=self.request_timeout) as client:
                answer = await client.request(
                    self.method, self.url, content=content, headers=headers
                )
        except httpx.TimeoutException as exc:
            raise HttpTimeoutError(
                f"{self.method} {self.url} got no answer within its timeout of "
                f"{self.request_timeout:g} s ({type(exc).__name__})",
                executor_id=self.id,
                url=self.url,
                timeout=self.request_timeout,
            ) from exc
        except httpx.HTTPError as exc:
            raise HttpRequestError(
                f"{self.method} {self.url} failed: {type(exc).__name__}: {exc}",
                executor_id=self.id,
                url=self.url,
            ) from exc
        if not answer.is_success:
            tail = answer.text[:BODY_TAIL]
            raise HttpStatusError(
                f"{self.method} {self.url} answered {answer.status_code} "
                f"{answer.reason_phrase}" + (f": {tail}" if tail else ""),
                executor_id=self.id,
                url=self.url,
                status_code=answer.status_code,
                body_tail=tail,
            )
        if self.response == "text":
            return answer.text
        try:
            return answer.json()
        except ValueError as exc:
            raise HttpResponseError(
                f"{self.method} {self.url} answered {answer.status_code} with a body that "
                f"is not JSON ({exc}); use response: text to receive it as text",
                executor_id=self.id,
                url=self.url,
            ) from exc

    def _encode(self, message: Any) -> bytes:
        try:
            return json.dumps(message).encode("utf-8")
        except (TypeError, ValueError) as exc:
            raise HttpRequestError(
                f"the message for {self.method} {self.url} is not JSON-serialisable "
                f"({type(message).__name__}: {exc}); convert it first or use body: none",
                executor_id=self.id,
                url=self.url,
            ) from exc


class HttpKind:
    """``http``: ``{"url", "method"?, "headers"?, "timeout"?, "body"?, "response"?}`` — see
    :class:`HttpExecutor`.
    """

    config_schema: Mapping[str, Any] = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "http executor",
        "type": "object",
        "properties": {
            "url": {"type": "string", "pattern": "^https?://[^\\s/]+"},
            "method": {"enum": list(METHODS), "default": "POST"},
            "headers": {"type": "object", "additionalProperties": {"type": "string"}},
            "timeout": {"type": "number", "exclusiveMinimum": 0, "default": DEFAULT_TIMEOUT},
            "body": {"enum": ["message", "none"]},
            "response": {"enum": ["json", "text"], "default": "json"},
        },
        "required": ["url"],
        "additionalProperties": False,
    }

    def capabilities(self, config: Mapping[str, Any], ctx: BuildContext) -> list[Capability]:
        """``network=<host of the URL>``, the host as httpx will contact it (IDNA rules
        applied: ``api。example。com``, with ideographic full stops, is ``api.example.com``),
        so the grant asked for names the host a user knows; any host when the URL has
        none that can be read (a malformed one fails :meth:`check` too)."""
        from urllib.parse import urlsplit

        import httpx

        url = config.get("url")
        try:
            # what urlsplit cannot read (a malformed address) is any host, as httpx may
            # read more than it should; what it reads, httpx names
            host = httpx.URL(url).host if isinstance(url, str) and urlsplit(url).hostname else None
        except (httpx.InvalidURL, ValueError):  # a malformed port or address
            host = None
        return [network(host)]

    def check(self, config: Mapping[str, Any], ctx: BuildContext) -> list[ConfigError]:
        """Every way ``config`` breaks :attr:`config_schema`."""
        return check_config(self.config_schema, config, ctx.node_id, source=ctx.source)

    def create(self, config: Mapping[str, Any], ctx: BuildContext) -> HttpExecutor:
        """An :class:`HttpExecutor` with id ``ctx.node_id``."""
        return HttpExecutor(
            ctx.node_id,
            config["url"],
            method=config.get("method", "POST"),
            headers=config.get("headers"),
            timeout=float(config.get("timeout", DEFAULT_TIMEOUT)),
            body=config.get("body"),
            response=config.get("response", "json"),
        )
