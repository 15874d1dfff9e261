"""The http kind against a real HTTP server on 127.0.0.1: JSON in and out, non-2xx and
timeouts are failures naming what happened."""

from __future__ import annotations

from typing import Any

import pytest
from executors_helpers import build, chain, paths
from plait import ExecutorFailedError
from plait.spi import BuildContext
from plait_executors import (
    HttpExecutor,
    HttpKind,
    HttpRequestError,
    HttpResponseError,
    HttpStatusError,
    HttpTimeoutError,
)

pytestmark = pytest.mark.anyio
KIND = HttpKind()


async def failure(node: HttpExecutor, message: Any = None) -> BaseException:
    """Run ``node`` in a workflow that must fail; return the executor's own error."""
    with pytest.raises(ExecutorFailedError) as info:
        await chain(node).run(message)
    assert info.value.executor_id == node.id
    assert info.value.__cause__ is not None
    return info.value.__cause__


async def test_the_message_is_posted_as_json_and_the_json_answer_sent_on(
    http_server: str,
) -> None:
    config = {"url": f"{http_server}/echo", "headers": {"x-token": "t1"}}
    node = build(KIND, config, "poster")
    (answer,) = (await chain(node).run({"q": [1, 2]})).outputs
    assert answer == {
        "method": "POST",
        "body": {"q": [1, 2]},
        "content_type": "application/json",
        "token": "t1",
    }


async def test_get_sends_no_body_and_text_answers_are_strings(http_server: str) -> None:
    node = build(KIND, {"url": f"{http_server}/echo", "method": "GET"}, "getter")
    (answer,) = (await chain(node).run("ignored")).outputs
    assert answer["method"] == "GET" and answer["body"] is None
    text = build(KIND, {"url": f"{http_server}/text", "method": "GET", "response": "text"}, "t")
    assert (await chain(text).run(None)).outputs == ["plain words"]


async def test_a_non_2xx_answer_fails_naming_the_status_and_the_url(http_server: str) -> None:
    url = f"{http_server}/status/503"
    error = await failure(build(KIND, {"url": url}, "flaky"), {"a": 1})
    assert isinstance(error, HttpStatusError)
    assert error.status_code == 503 and error.url == url
    assert "503" in str(error) and url in str(error) and "executor 'flaky'" in str(error)
    assert "as asked" in error.body_tail


async def test_a_404_is_a_failure_too(http_server: str) -> None:
    error = await failure(build(KIND, {"url": f"{http_server}/status/404"}, "missing"))
    assert isinstance(error, HttpStatusError) and error.status_code == 404


async def test_a_slow_server_times_out(http_server: str) -> None:
    node = build(KIND, {"url": f"{http_server}/slow", "timeout": 0.3}, "waiter")
    error = await failure(node, {})
    assert isinstance(error, HttpTimeoutError)
    assert error.timeout == 0.3 and "timeout of 0.3 s" in str(error)


async def test_a_body_that_is_not_json_fails_saying_so(http_server: str) -> None:
    node = build(KIND, {"url": f"{http_server}/text", "method": "GET"}, "strict")
    error = await failure(node)
    assert isinstance(error, HttpResponseError) and "not JSON" in str(error)


async def test_a_refused_connection_fails_naming_the_url() -> None:
    import socket

    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}/"
    error = await failure(build(KIND, {"url": url, "timeout": 5}, "nobody"), {})
    assert isinstance(error, HttpRequestError) and url in str(error)


async def test_a_message_that_is_not_json_fails_before_any_request(http_server: str) -> None:
    node = build(KIND, {"url": f"{http_server}/echo"}, "poster")
    error = await failure(node, {1, 2})
    assert isinstance(error, HttpRequestError) and "not JSON-serialisable" in str(error)


def test_the_request_limit_is_not_the_kernel_timeout_policy() -> None:
    node = KIND.create({"url": "http://127.0.0.1/", "timeout": 5}, BuildContext(node_id="n"))
    assert node.request_timeout == 5.0 and node.timeout is None


def test_config_errors_carry_json_paths_all_at_once() -> None:
    config = {
        "url": "ftp://example.org",
        "method": "BREW",
        "timeout": -1,
        "headers": {"x": 1},
        "body": "always",
        "respones": "json",
    }
    errors = KIND.check(config, BuildContext(node_id="api"))
    assert paths(errors) == [
        "/config/body",
        "/config/headers/x",
        "/config/method",
        "/config/respones",
        "/config/timeout",
        "/config/url",
    ]
    assert "did you mean 'response'?" in str(errors[3])
    assert paths(KIND.check({}, BuildContext(node_id="api"))) == ["/config"]


@pytest.mark.parametrize(
    ("url", "grant"),
    [
        # ideographic, fullwidth and halfwidth full stops separate labels, as httpx reads them
        ("http://api\u3002example\u3002com/v1", "network=api.example.com"),
        ("https://API\uff0eExample\uff61com:8443/", "network=api.example.com"),
        ("http://127.0.0.1:8080/echo", "network=127.0.0.1"),
        ("http://[bad/", "network"),  # no host that can be read: any host
    ],
)
def test_the_grant_an_http_node_asks_for_names_the_host_it_contacts(url: str, grant: str) -> None:
    (capability,) = KIND.capabilities({"url": url}, BuildContext())
    assert str(capability) == grant
