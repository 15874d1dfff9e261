"""A workflow file runs programs, makes requests or imports code only where it is granted.

The reproducers of issue 24 (F4), against real components: a ``shell`` step that writes a
marker file through ``sh -c``, and an ``http`` step against a real HTTP server on
127.0.0.1 (in a thread, on a free port), through ``plait run`` (in-process and as a real
``plait`` process), ``plait validate`` and ``plait.load``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import plait
import pytest
from click.testing import CliRunner, Result
from plait_cli import make_cli
from plait_documents import CapabilityError, Grants, check_granted, needs

SHELL = """\
name: pwn
workflow:
  steps:
    - id: pwn
      type: executor
      kind: shell
      config: {argv: [sh, -c, "id > PWNED"], input: none}
"""

HTTP = """\
name: call
workflow:
  steps:
    - id: call
      type: executor
      kind: http
      config: {{url: "http://127.0.0.1:{port}/admin/delete-everything", method: GET,
                body: none, response: text, timeout: 5}}
"""

# the python step's module writes a marker when imported: nothing may import it before
# every capability the file needs is granted
IMPORT_AND_SHELL = """\
workflow:
  - id: code
    type: executor
    kind: python
    config: {ref: "marker_module:run"}
  - id: pwn
    type: executor
    kind: shell
    config: {argv: [sh, -c, "id > PWNED"], input: none}
"""

MARKER_MODULE = """\
from pathlib import Path
from typing import Any

Path(__file__).with_name("IMPORTED").write_text("imported")


async def run(message: str) -> str:
    return message
"""


def plait_cli(*args: str) -> Result:
    return CliRunner().invoke(make_cli(), [*args, "--no-checkpoint", "-q"])


@pytest.fixture
def server() -> Iterator[tuple[int, list[str]]]:
    """A real HTTP server on 127.0.0.1: its port and the paths it was asked for."""
    seen: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append(self.path)
            if self.path == "/redirect":  # to a path the file did not name
                self.send_response(302)
                self.send_header("Location", "/admin/delete-everything")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            body = b"deleted"
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield httpd.server_address[1], seen
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


# -- subprocess -------------------------------------------------------------------------------


def test_a_shell_step_without_a_grant_is_refused_and_runs_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pwn.yaml").write_text(SHELL)
    refused = plait_cli("run", "pwn.yaml")
    assert refused.exit_code == 1
    assert not (tmp_path / "PWNED").exists()
    # the node, its line:column in the file, the capability and the exact flag
    assert (
        "pwn.yaml:4:7 at /nodes/0: node 'pwn' (kind shell, in steps.executor) needs subprocess, "
        "which is not granted; grant it with --allow subprocess"
    ) in refused.stderr
    assert "(or --trust for every capability)" in refused.stderr
    granted = plait_cli("run", "pwn.yaml", "--allow", "subprocess")
    assert granted.exit_code == 0, granted.stderr
    assert "uid=" in (tmp_path / "PWNED").read_text()


def test_the_reproducer_through_a_real_plait_process(tmp_path: Path) -> None:
    (tmp_path / "pwn.yaml").write_text(SHELL)
    command = [sys.executable, "-m", "plait_cli", "run", "pwn.yaml", "--no-checkpoint", "-q"]
    refused = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert refused.returncode == 1, refused.stderr
    assert "needs subprocess" in refused.stderr and not (tmp_path / "PWNED").exists()
    done = subprocess.run(
        [*command, "--trust"], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "PWNED").exists()


def test_nothing_is_imported_before_every_capability_is_granted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "marker_module.py").write_text(MARKER_MODULE)
    (tmp_path / "both.yaml").write_text(IMPORT_AND_SHELL)
    monkeypatch.syspath_prepend(str(tmp_path))
    refused = plait_cli("run", "both.yaml", "--allow-imports")
    assert refused.exit_code == 1
    assert "node 'pwn' (kind shell, in steps.executor) needs subprocess" in refused.stderr
    assert "needs imports" not in refused.stderr  # --allow-imports granted that one
    assert not (tmp_path / "IMPORTED").exists() and not (tmp_path / "PWNED").exists()
    done = plait_cli("run", "both.yaml", "--allow-imports", "--allow", "subprocess")
    assert done.exit_code == 0, done.stderr
    assert (tmp_path / "IMPORTED").exists() and (tmp_path / "PWNED").exists()


# -- network ----------------------------------------------------------------------------------


def test_an_http_step_reaches_only_a_granted_host(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, server: tuple[int, list[str]]
) -> None:
    port, seen = server
    monkeypatch.chdir(tmp_path)
    (tmp_path / "call.yaml").write_text(HTTP.format(port=port))
    refused = plait_cli("run", "call.yaml")
    assert refused.exit_code == 1
    assert (
        "node 'call' (kind http, in steps.executor) needs network=127.0.0.1, which is not granted; "
        "grant it with --allow network=127.0.0.1"
    ) in refused.stderr
    elsewhere = plait_cli("run", "call.yaml", "--allow", "network=api.example.com,subprocess")
    assert elsewhere.exit_code == 1
    assert "Granted: subprocess,network=api.example.com." in elsewhere.stderr
    assert seen == []  # no request reached the server
    granted = plait_cli("run", "call.yaml", "--allow", "network=127.0.0.1")
    assert granted.exit_code == 0, granted.stderr
    assert granted.stdout.strip() == "deleted"
    assert seen == ["/admin/delete-everything"]
    # a granted host's redirect is not followed: the request goes nowhere else
    (tmp_path / "call.yaml").write_text(
        HTTP.format(port=port).replace("/admin/delete-everything", "/redirect")
    )
    redirected = plait_cli("run", "call.yaml", "--allow", "network=127.0.0.1")
    assert redirected.exit_code == 1 and "answered 302" in redirected.stderr
    assert seen == ["/admin/delete-everything", "/redirect"]


def test_validate_prints_what_a_file_needs_and_runs_nothing(
    tmp_path: Path, server: tuple[int, list[str]]
) -> None:
    port, seen = server
    path = tmp_path / "call.yaml"
    path.write_text(HTTP.format(port=port))
    (tmp_path / "pwn.yaml").write_text(SHELL)
    result = CliRunner().invoke(make_cli(), ["validate", str(path), str(tmp_path / "pwn.yaml")])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[:3] == [
        f"{path}: ok",
        "  needs network=127.0.0.1; to run it, grant: --allow network=127.0.0.1",
        f"    network=127.0.0.1: node 'call' (kind http, in steps.executor) at {path}:4:7 "
        "at /nodes/0",
    ]
    assert lines[4] == "  needs subprocess; to run it, grant: --allow subprocess"
    assert seen == [] and not (tmp_path / "PWNED").exists()


# -- Python -----------------------------------------------------------------------------------


def test_plait_load_takes_the_same_grants_as_allow(
    tmp_path: Path, server: tuple[int, list[str]]
) -> None:
    port, seen = server
    path = tmp_path / "call.yaml"
    path.write_text(HTTP.format(port=port))
    with pytest.raises(CapabilityError) as caught:
        plait.load(path)
    (need,) = caught.value.missing
    assert (str(need.capability), need.node_id, need.position.line) == (
        "network=127.0.0.1",
        "call",
        4,
    )
    assert "grant it with allow=['network=127.0.0.1']" in str(caught.value)
    with pytest.raises(CapabilityError):
        plait.load(path, allow=["network=127.0.0.2"])
    assert seen == []
    assert plait.load(path, allow="network=127.0.0.1").run_sync("").outputs == ["deleted"]
    assert plait.load(path, allow="all").run_sync("").outputs == ["deleted"]
    assert seen == ["/admin/delete-everything"] * 2


def test_a_nested_workflow_needs_what_its_nodes_need(tmp_path: Path) -> None:
    inner = plait.WorkflowSpec(
        name="inner",
        start="pwn",
        nodes=(
            plait.NodeSpec(
                "pwn",
                kind="shell",
                config={"argv": ["sh", "-c", "id > PWNED"], "input": "none", "cwd": str(tmp_path)},
            ),
            plait.NodeSpec("out", kind="flow.output"),  # a pure kind: it needs nothing
        ),
        edge_groups=(plait.EdgeGroupSpec("direct:pwn->out", "direct", ("pwn",), ("out",)),),
    )
    text = (
        "workflow:\n  - id: outer\n    type: executor\n    kind: workflow\n"
        f"    config: {{spec: {json.dumps(inner.to_dict())}}}\n"
    )
    path = tmp_path / "nested.yaml"
    path.write_text(text)
    with pytest.raises(
        CapabilityError, match=r"node 'outer' \(kind shell, in steps.executor\) needs subprocess"
    ):
        plait.load(path)
    assert not (tmp_path / "PWNED").exists()
    assert plait.load(path, allow="subprocess").run_sync("").outputs == [""]
    assert (tmp_path / "PWNED").exists()


# -- what a spec needs ------------------------------------------------------------------------


def _spec(*nodes: plait.NodeSpec, edges: tuple[plait.EdgeGroupSpec, ...] = ()) -> Any:
    return plait.WorkflowSpec(name="t", start=nodes[0].id, nodes=nodes, edge_groups=edges)


def test_a_spec_needs_what_its_kinds_declare_and_not_what_the_caller_passes() -> None:
    spec = _spec(
        plait.NodeSpec("run", kind="shell", config={"argv": ["true"], "at": [3, 5]}),
        plait.NodeSpec("get", kind="http", config={"url": "https://API.example.com:8443/x"}),
        plait.NodeSpec("odd", kind="http", config={"url": "http://[::1"}),
        plait.NodeSpec("mine", kind="python", config={"ref": "x:y"}),
        plait.NodeSpec("theirs", kind="python", config={"ref": "x:y"}),
        plait.NodeSpec("done", kind="flow.output"),
        edges=(
            plait.EdgeGroupSpec(
                "conditional:run->get",
                "conditional",
                ("run",),
                ("get",),
                {"condition": {"ref": "x:pred"}},
            ),
        ),
    )

    async def mine(message: str) -> str:
        return message

    found = needs(spec, executors={"mine": mine}, source="doc.yaml")
    assert [(str(n.capability), n.node_id) for n in found] == [
        ("subprocess", "run"),
        ("network=api.example.com", "get"),
        ("network", "odd"),  # a URL whose host cannot be read: any host
        ("imports", "theirs"),
        ("imports", "conditional:run->get"),
    ]
    assert str(found[0].position) == "doc.yaml:3:5 at /nodes/0"
    with pytest.raises(CapabilityError) as caught:
        check_granted(spec, Grants.of("network=api.example.com,imports"), executors={})
    assert [str(n.capability) for n in caught.value.missing] == ["subprocess", "network"]
    cli = str(caught.value.for_cli())
    assert "node 'run' (kind shell) needs subprocess, which is not granted; grant it with " in cli
    assert "--allow subprocess,network (or --trust for every capability)" in cli
    assert "Granted: imports,network=api.example.com." in cli


def test_a_placement_a_document_names_needs_programs_and_the_network() -> None:
    spec = _spec(plait.NodeSpec("far", kind="flow.output", placement="ray"))
    found = needs(spec)
    assert [(str(n.capability), str(n)) for n in found] == [
        ("subprocess", "node 'far' (kind flow.output, placement ray)"),
        ("network", "node 'far' (kind flow.output, placement ray)"),
    ]


def test_a_dag_node_needs_what_the_kind_it_names_needs(tmp_path: Path) -> None:
    document = {
        "nodes": [
            {"id": "a", "agent_name": "shell", "is_entry": True},
            {"id": "b", "agent_name": "mine", "is_exit": True},
        ],
        "connections": [{"source_id": "a", "target_id": "b"}],
    }
    path = tmp_path / "dag.json"
    path.write_text(json.dumps(document))

    async def mine(context: dict[str, Any]) -> dict[str, Any]:  # a DAG agent's shape
        return {}

    with pytest.raises(CapabilityError) as caught:
        plait.load(path, executors={"mine": mine})
    assert [str(n) for n in caught.value.missing] == ["node 'a' (kind shell, in dag.node)"]


def test_the_printed_resume_command_grants_what_the_run_was_granted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "fails.yaml").write_text(SHELL.replace('"id > PWNED"', '"id > PWNED; exit 3"'))
    failed = CliRunner().invoke(make_cli(), ["run", "fails.yaml", "-q", "--allow", "subprocess"])
    assert failed.exit_code == 1
    (hint,) = [line for line in failed.stderr.splitlines() if line.startswith("resume with: ")]
    words = hint.removeprefix("resume with: ").split()
    assert words[:2] == ["plait", "resume"] and words[-2:] == ["--allow", "subprocess"]
    again = CliRunner().invoke(make_cli(), [*words[1:], "-q"])
    assert "not granted" not in again.stderr
    assert again.exit_code == 1 and "exited with code 3" in again.stderr  # it ran the step again


def test_the_printed_resume_command_keeps_allow_imports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "marker_module.py").write_text(MARKER_MODULE)
    both = IMPORT_AND_SHELL.replace('"id > PWNED"', '"exit 3"')
    (tmp_path / "both.yaml").write_text(both)
    failed = CliRunner().invoke(
        make_cli(), ["run", "both.yaml", "-q", "--allow-imports", "--allow", "subprocess"]
    )
    assert failed.exit_code == 1
    (hint,) = [line for line in failed.stderr.splitlines() if line.startswith("resume with: ")]
    words = hint.removeprefix("resume with: ").split()
    assert words[-3:] == ["--allow-imports", "--allow", "subprocess"]
    again = CliRunner().invoke(make_cli(), [*words[1:], "-q"])
    assert again.exit_code == 1 and "exited with code 3" in again.stderr, again.stderr


def test_a_checkpoint_store_a_nested_spec_names_needs_its_files(tmp_path: Path) -> None:
    store = tmp_path / "evil.db"
    inner = plait.WorkflowSpec(
        name="inner",
        start="out",
        nodes=(plait.NodeSpec("out", kind="flow.output"),),
        edge_groups=(),
        options={"checkpoint": f"sqlite:///{store}"},  # the inner run's default store
    )
    text = (
        "workflow:\n  - id: outer\n    type: executor\n    kind: workflow\n"
        f"    config: {{spec: {json.dumps(inner.to_dict())}}}\n"
    )
    path = tmp_path / "nested.yaml"
    path.write_text(text)
    with pytest.raises(CapabilityError) as caught:
        plait.load(path)
    assert [str(n) for n in caught.value.missing] == [
        "node 'outer' (kind steps.executor, run option checkpoint)"
    ]
    assert str(caught.value.missing[0].capability) == f"filesystem={store}"
    assert not store.exists()
    workflow = plait.load(path, allow=f"filesystem={tmp_path}")
    assert workflow.run_sync("hi").outputs == ["hi"] and store.exists()


@pytest.mark.parametrize(
    ("store", "capabilities"),
    [
        ("memory://x", []),
        ("redis://Cache.example.com:6379/0", ["network=cache.example.com"]),
        ("postgresql://u@db.example.com/plait", ["network=db.example.com"]),
        ("file:///srv/runs", ["filesystem=/srv/runs"]),
        ("s3://bucket/runs", ["network", "filesystem"]),
    ],
)
def test_a_spec_naming_a_store_needs_its_host_or_its_files(
    store: str, capabilities: list[str]
) -> None:
    spec = plait.WorkflowSpec(
        name="t",
        start="out",
        nodes=(plait.NodeSpec("out", kind="flow.output"),),
        edge_groups=(),
        options={"checkpoint": store},
    )
    assert [str(n.capability) for n in needs(spec)] == capabilities


def test_a_store_reached_through_a_link_out_of_the_granted_folder_is_refused(
    tmp_path: Path,
) -> None:
    granted, elsewhere = tmp_path / "granted", tmp_path / "elsewhere"
    granted.mkdir()
    elsewhere.mkdir()
    (granted / "link").symlink_to(elsewhere)
    inner = plait.WorkflowSpec(
        name="inner",
        start="out",
        nodes=(plait.NodeSpec("out", kind="flow.output"),),
        edge_groups=(),
        options={"checkpoint": f"sqlite:///{granted}/link/evil.db"},
    )
    text = (
        "workflow:\n  - id: outer\n    type: executor\n    kind: workflow\n"
        f"    config: {{spec: {json.dumps(inner.to_dict())}}}\n"
    )
    path = granted / "nested.yaml"
    path.write_text(text)
    with pytest.raises(CapabilityError) as caught:
        plait.load(path, allow=f"filesystem={granted}")
    # the need names the folder the link leads to: what would be written
    assert str(caught.value.missing[0].capability) == f"filesystem={elsewhere / 'evil.db'}"
    assert not (elsewhere / "evil.db").exists()
