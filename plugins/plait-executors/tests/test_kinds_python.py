"""The python kind: an executor or async function by import path; no imports when the
document is untrusted."""

from __future__ import annotations

from typing import Any

import pytest
from executors_helpers import build, chain, paths
from plait import ConfigError, Executor, FunctionExecutor, WorkflowContext, executor, handler
from plait.spi import BuildContext
from plait_executors import PythonKind

pytestmark = pytest.mark.anyio
KIND = PythonKind()


async def double(value: int) -> int:
    return value * 2


@executor(id="tripler", max_visits=7)
async def triple(value: int) -> int:
    return value * 3


class Adder(Executor):
    def __init__(self, id: str, amount: int = 10) -> None:
        self.amount = amount
        super().__init__(id)

    @handler
    async def add(self, value: int, ctx: WorkflowContext[int]) -> None:
        await ctx.send_message(value + self.amount)


ADD_5 = Adder("add5", amount=5)
NOT_AN_EXECUTOR = 42


def ref(name: str) -> dict[str, Any]:
    return {"ref": f"{__name__}:{name}"}


async def test_an_async_function_runs_in_a_workflow() -> None:
    node = build(KIND, ref("double"), "doubler")
    assert isinstance(node, FunctionExecutor)
    assert (await chain(node).run(4)).outputs == [8]


async def test_a_function_executor_is_remade_under_the_node_id() -> None:
    node = build(KIND, ref("triple"), "times3")
    assert node is not triple and node.id == "times3" and triple.id == "tripler"
    assert isinstance(node, FunctionExecutor) and node.max_visits == 7  # limits kept
    assert (await chain(node).run(2)).outputs == [6]
    assert build(KIND, ref("triple"), "tripler") is triple


async def test_an_executor_subclass_is_instantiated_with_the_node_id() -> None:
    node = build(KIND, ref("Adder"), "plus")
    assert type(node) is Adder
    assert (await chain(node).run(1)).outputs == [11]


async def test_an_executor_instance_is_reused_or_copied_under_the_new_id() -> None:
    assert build(KIND, ref("ADD_5"), "add5") is ADD_5
    copy = build(KIND, ref("ADD_5"), "plus5")
    assert copy is not ADD_5 and copy.id == "plus5" and ADD_5.id == "add5"
    # its handlers are bound to the copy, which keeps the original's configuration
    assert copy.handlers[0].call.__self__ is copy  # type: ignore[attr-defined]
    assert (await chain(copy).run(1)).outputs == [6]


def test_imports_are_refused_for_an_untrusted_document() -> None:
    ctx = BuildContext(node_id="doubler", allow_imports=False)
    (error,) = KIND.check(ref("double"), ctx)
    assert isinstance(error, ConfigError)
    assert error.path == "/config/ref"
    assert "executor 'doubler'" in str(error) and "allow_imports=True" in str(error)
    with pytest.raises(ConfigError, match="imports are not allowed"):
        KIND.create(ref("double"), ctx)


def test_an_import_failure_names_the_ref_and_the_error() -> None:
    ctx = BuildContext(node_id="n")
    (error,) = KIND.check({"ref": "no_such_module_for_plait:thing"}, ctx)
    assert error.path == "/config/ref"
    assert "'no_such_module_for_plait:thing'" in str(error)
    assert "ModuleNotFoundError" in str(error)
    assert isinstance(error.__cause__, ImportError)
    (missing,) = KIND.check(ref("nothing_here"), ctx)
    assert "AttributeError" in str(missing) and "nothing_here" in str(missing)


def test_an_object_that_is_no_executor_is_refused() -> None:
    (error,) = KIND.check(ref("NOT_AN_EXECUTOR"), BuildContext(node_id="n"))
    assert error.path == "/config/ref" and "is a int, not an Executor" in str(error)


def test_config_errors_carry_json_paths() -> None:
    ctx = BuildContext(node_id="n")
    assert paths(KIND.check({"ref": "no colon here"}, ctx)) == ["/config/ref"]
    errors = KIND.check({"ref": 3, "reff": "a:b"}, ctx)
    assert paths(errors) == ["/config/ref", "/config/reff"]
    assert "did you mean 'ref'?" in str(errors[1])
    assert paths(KIND.check({}, ctx)) == ["/config"]
