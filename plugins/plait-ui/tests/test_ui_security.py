"""The security of `plait ui`: the token exchanged for a strict cookie, the Host allow-list,
same-origin POSTs with a CSRF token, the content security policy, the loopback bind; and
the command itself, started as a real process."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx2 as httpx
import pytest
from plait_ui import make_app
from plait_ui._security import CSP, BindError, allowed_hosts_for, check_bind, is_loopback
from starlette.testclient import TestClient
from ui_helpers import TOKEN, chain, post, run, settings, signed_in, sqlite


def client_for(url: str, **options: object) -> TestClient:
    return TestClient(make_app(settings(url, **options)), base_url="http://testserver")


def test_no_token_no_page(tmp_path: Path) -> None:
    with client_for(sqlite(tmp_path)) as client:
        for path in ("/", "/runs/x", "/static/app.js", "/static/vendor/htmx.min.js"):
            response = client.get(path)
            assert response.status_code == 403, path
            assert "open the URL" in response.text
        assert client.get("/?token=wrong").status_code == 403
        for name in ("plait_ui_session", "plait_ui_session_0"):
            client.cookies.set(name, TOKEN)  # the token is not the session
        assert client.get("/").status_code == 403


def test_the_token_is_exchanged_for_a_strict_http_only_cookie(tmp_path: Path) -> None:
    with client_for(sqlite(tmp_path)) as client:
        response = client.get(f"/runs/abc?token={TOKEN}&checkpoint=c1", follow_redirects=False)
        assert response.status_code == 303
        assert response.headers["location"] == "/runs/abc?checkpoint=c1", "token left in URL"
        cookie = response.headers["set-cookie"]
        assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/" in cookie
        assert TOKEN not in cookie, "the cookie must not be the token"
        assert client.get("/").status_code == 200


def test_the_token_signs_in_once(tmp_path: Path) -> None:
    """Issue 34 (N4): the "one-time" token could be exchanged again, by anyone who saw it."""
    with client_for(sqlite(tmp_path)) as first:
        assert first.get(f"/?token={TOKEN}", follow_redirects=False).status_code == 303
        # the same browser opening the printed URL again stays signed in
        again = first.get(f"/?token={TOKEN}", follow_redirects=False)
        assert again.status_code == 303 and "set-cookie" not in again.headers
        assert first.get("/").status_code == 200
        app = first.app
        with TestClient(app, base_url="http://testserver") as second:
            refused = second.get(f"/?token={TOKEN}", follow_redirects=False)
            assert refused.status_code == 403 and "used already" in refused.text
            assert second.get("/").status_code == 403
        assert first.get("/").status_code == 200


def test_two_servers_do_not_sign_each_other_out(tmp_path: Path) -> None:
    """Issue 34 (N4): the session cookie had one name for every server, and cookies are not
    kept apart by port: signing in to a second `plait ui` signed the browser out of the
    first."""
    url = sqlite(tmp_path)
    one, two = make_app(settings(url)), make_app(settings(url))
    assert one.cookie != two.cookie and one.cookie.startswith("plait_ui_session_")
    with TestClient(one, base_url="http://testserver") as browser:
        browser.get(f"/?token={TOKEN}")
        with TestClient(two, base_url="http://testserver") as other:
            signed = other.get(f"/?token={TOKEN}", follow_redirects=False)
            for name, value in signed.cookies.items():  # one cookie jar, as in a browser
                browser.cookies.set(name, value)
            other.cookies.update(browser.cookies)
            assert other.get("/").status_code == 200
        assert browser.get("/").status_code == 200, "the second server signed us out"


def test_a_host_outside_the_allow_list_is_refused(tmp_path: Path) -> None:
    with signed_in(sqlite(tmp_path)) as client:
        assert client.get("/").status_code == 200
        rebound = client.get("/", headers={"host": "attacker.example:8765"})
        assert rebound.status_code == 400
        assert client.get(f"/?token={TOKEN}", headers={"host": "evil"}).status_code == 400
        assert client.get("/", headers={"host": "testserver:9"}).status_code == 200


def test_changes_need_the_same_origin_and_the_csrf_token(tmp_path: Path) -> None:
    url = sqlite(tmp_path)
    result = run(chain(2), 0, url)
    with signed_in(url) as client:
        page = client.get(f"/runs/{result.run_id}")
        csrf = re.search(r'name="csrf-token" content="([^"]+)"', page.text)
        assert csrf is not None
        checkpoint = re.findall(r'name="checkpoint" value="([^"]+)"', page.text)[0]
        form = {"csrf": csrf.group(1), "checkpoint": checkpoint}
        path = f"/runs/{result.run_id}/fork"
        cross = client.post(path, data=form, headers={"origin": "http://evil.example"})
        assert cross.status_code == 403 and "cross-origin" in cross.text
        assert client.post(path, data=form).status_code == 403, "no Origin header"
        no_csrf = client.post(
            path, data={"checkpoint": checkpoint}, headers={"origin": "http://testserver"}
        )
        assert no_csrf.status_code == 403 and "CSRF" in no_csrf.text
        wrong = {**form, "csrf": "0" * 64}
        assert (
            client.post(path, data=wrong, headers={"origin": "http://testserver"}).status_code
            == 403
        )
        assert post(client, path, {"checkpoint": checkpoint}).status_code == 303


def test_every_response_carries_the_content_security_policy(tmp_path: Path) -> None:
    url = sqlite(tmp_path)
    result = run(chain(1), 0, url)
    with signed_in(url) as client:
        for path in (
            "/",
            f"/runs/{result.run_id}",
            f"/runs/{result.run_id}/graph.json",
            "/static/app.css",
            "/runs/missing",
        ):
            response = client.get(path)
            assert response.headers["content-security-policy"] == CSP, path
            assert response.headers["x-content-type-options"] == "nosniff"
            assert response.headers["x-frame-options"] == "DENY"
        assert "default-src 'self'" in CSP and "unsafe" not in CSP
        assert client.get("/", headers={"host": "evil"}).headers["content-security-policy"] == CSP
        page = client.get(f"/runs/{result.run_id}").text
        assert not re.search(r"<script(?![^>]*\bsrc=\"/static/)(?![^>]*application/json)", page)
        assert " style=" not in page and "<style" not in page


def test_a_non_loopback_bind_needs_host() -> None:
    assert check_bind("127.0.0.1", explicit=False) is None
    assert check_bind("::1", explicit=False) is None
    assert check_bind("localhost", explicit=False) is None
    for address in ("0.0.0.0", "192.168.1.5", "example.org"):
        with pytest.raises(BindError, match="--host"):
            check_bind(address, explicit=False)
        warning = check_bind(address, explicit=True)
        assert warning is not None and "warning" in warning
    assert is_loopback("127.0.0.2") and not is_loopback("10.0.0.1")
    assert allowed_hosts_for("127.0.0.1") == {"127.0.0.1", "localhost", "[::1]"}
    assert "10.0.0.1" in allowed_hosts_for("10.0.0.1")


# -- the command ---------------------------------------------------------------------------------


@contextmanager
def served(*args: str, cwd: Path) -> Iterator[tuple[str, list[str]]]:
    """Run `plait ui ARGS` (port 0); yield the URL it printed and what it printed."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(
        [sys.executable, "-m", "plait_cli", "ui", *args, "--port", "0"],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    lines: list[str] = []
    try:
        assert process.stdout is not None
        deadline = time.monotonic() + 30
        url = None
        while time.monotonic() < deadline:
            line = process.stdout.readline()
            if not line:
                break
            lines.append(line)
            if line.startswith("open "):
                url = line.split(" ", 1)[1].strip()
                break
        assert url is not None, "".join(lines)
        yield url, lines
    finally:
        process.terminate()
        process.wait(timeout=20)


def test_plait_ui_prints_a_token_url_that_signs_in(tmp_path: Path) -> None:
    url = sqlite(tmp_path)
    run_id = run(chain(1, name="printed"), 0, url).run_id
    with served(url, "--read-only", cwd=tmp_path) as (printed, lines):
        assert printed.startswith("http://127.0.0.1:") and "?token=" in printed
        assert "(read-only)" in "".join(lines)
        base = printed.split("/?", 1)[0]
        with httpx.Client(timeout=10) as client:
            assert client.get(base + "/").status_code == 403
            page = client.get(printed, follow_redirects=True)
            assert page.status_code == 200 and run_id in page.text
            port = base.rsplit(":", 1)[1]
            assert client.get(base + "/", headers={"host": f"evil:{port}"}).status_code == 400


def test_plait_ui_on_another_address_warns(tmp_path: Path) -> None:
    url = sqlite(tmp_path)
    run(chain(1), 0, url)
    with served(url, "--host", "0.0.0.0", cwd=tmp_path) as (printed, lines):
        assert any("warning" in line and "0.0.0.0" in line for line in lines)
        assert printed.startswith("http://127.0.0.1:")


def test_plait_ui_is_a_plait_command(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "plait_cli", "ui", "--help"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "--read-only" in done.stdout and "--workflow" in done.stdout


def test_plait_ui_does_not_create_a_missing_sqlite_store(tmp_path: Path) -> None:
    from click.testing import CliRunner
    from plait_cli import make_cli

    result = CliRunner().invoke(make_cli(), ["ui", f"sqlite:///{tmp_path / 'none.db'}"])
    assert result.exit_code == 1
    assert "does not exist" in result.output
    assert not (tmp_path / "none.db").exists()
    both = CliRunner().invoke(make_cli(), ["ui", "--read-only", "--allow-edits"])
    assert both.exit_code == 2 and "--allow-edits" in both.output
