"""The ``agent`` executor kind: one model call per message, through the ``llm`` library.

``llm`` is imported here, and this module is imported only when an ``agent`` config is
first checked (the kind is registered with :func:`plait.spi.lazy`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

import anyio
import anyio.from_thread
import anyio.to_thread
from plait import ConfigError, Executor, PlaitError, RequestResponse, WorkflowContext
from plait.spi import (
    BuildContext,
    CompiledTemplate,
    Handler,
    compile_template,
    import_ref,
    outside_call,
)
from plait_documents import (
    IMPORTS,
    Capability,
    check_config,
    config_error,
    did_you_mean,
    json_pointer,
    network,
    spell,
)

from ._structured import answer_problem, correction, json_instruction, parse_answer

__all__ = ["MODEL_ENV", "AgentError", "AgentExecutor", "AgentKind"]

#: the environment variable naming the model when a config gives none
MODEL_ENV = "PLAIT_LLM_MODEL"

#: The key of an agent's state under which it keeps the messages whose model call waits
#: for a person's answer (request id -> message; see :meth:`AgentExecutor._handle`).
ASKED_KEY = "__plait_llm_asked__"


class AgentError(PlaitError):
    """A model call failed, or answered something the config does not allow (an answer that
    is not JSON matching ``structured_output``, even after the corrective retry).

    :param executor_id: the agent that failed.
    :param model_id: the model it called.
    """

    def __init__(self, message: str, *, executor_id: str, model_id: str) -> None:
        self.executor_id = executor_id
        self.model_id = model_id
        super().__init__(f"agent {executor_id!r} (model {model_id!r}): {message}")


class AgentExecutor(Executor):
    """Prompts an ``llm`` model with each message it receives and sends the answer on.

    A ``str`` message is the prompt; any other value is rendered as JSON. With an
    ``instruction`` template, the prompt is the template rendered over ``{"input": message}``.
    The executor sends the model's text, or with ``structured_output`` the parsed JSON object
    (a ``dict``). When the model streams, each chunk is reported as a custom event
    ``{"token": chunk}`` while the answer arrives.

    Structured output goes through llm's schema API when the model supports it
    (``supports_schema``); otherwise the prompt asks for JSON matching the schema. Either
    way the answer is parsed (a fenced ```` ```json ```` block is fine) and validated; an
    unusable answer gets one corrective retry, in the same conversation, that tells the
    model what was wrong (the run gets a custom event ``{"structured_output_retry":
    problem}``). A second unusable answer is an :class:`AgentError` naming the problem and
    its JSON path.

    The model is an ``llm`` sync model, called in a worker thread so the event loop (asyncio
    or trio) never blocks.

    :param id: the executor id.
    :param model: an ``llm.Model`` (from ``llm.get_model``).
    :param system: the system prompt.
    :param instruction: a compiled ``{{ }}`` template for the prompt.
    :param options: the model's options (``temperature`` …).
    :param structured_output: a JSON Schema (of an object) for the answer.
    :param tools: Python functions the model may call (llm's tool calling): the model's
        answer is then the end of llm's chain of calls and tool results.
    """

    def __init__(
        self,
        id: str,
        model: Any,
        *,
        system: str | None = None,
        instruction: CompiledTemplate | None = None,
        options: Mapping[str, Any] | None = None,
        structured_output: Mapping[str, Any] | None = None,
        tools: list[Any] | None = None,
    ) -> None:
        self.model = model
        self.system = system
        self.instruction = instruction
        self.options = dict(options or {})
        self.structured_output = dict(structured_output) if structured_output else None
        self.tools = list(tools or [])
        super().__init__(id)

    @property
    def model_id(self) -> str:
        """The id of the model this agent calls."""
        return str(self.model.model_id)

    @property
    def uses_schema_api(self) -> bool:
        """Whether structured output goes through llm's schema API (else by instruction)."""
        return self.structured_output is not None and bool(
            getattr(self.model, "supports_schema", False)
        )

    def declare_handlers(self) -> tuple[Handler, ...]:
        """One handler: any message in, the answer (a dict with ``structured_output``,
        else text) out."""
        sends = dict if self.structured_output is not None else str
        return (Handler(f"agent:{self.model_id}", Any, (sends,), (), self._handle),)

    async def _handle(self, message: Any, ctx: WorkflowContext[Any, Any]) -> None:
        """Answer ``message``; or, when an answerer of the model call asks a person first,
        ask and wait.

        An answerer that will not let a call go before a person answers (a budget whose
        ``on_exhausted`` is ``ask``) refuses it with an error whose ``asks`` attribute is
        ``(request, response_type)``: the agent asks with ``ctx.request_info`` and keeps
        the message in its state (checkpointed), sending nothing; the run ends idle with
        the request pending. The answer comes back as a :class:`~plait.RequestResponse`
        (the request's payload sets ``respond_with_request``), and the agent prompts
        again with the message it kept: the answerers see the answer first (through the
        invocation's message) and let the call go, or refuse it for good.
        """
        asked = ctx.state.get(ASKED_KEY)
        if asked and isinstance(message, RequestResponse) and message.request_id in asked:
            message = asked.pop(message.request_id)
            if not asked:
                del ctx.state[ASKED_KEY]
        try:
            answer = await self.ask(message, ctx)
        except Exception as exc:
            asks = getattr(exc, "asks", None)
            if asks is None:
                raise
            request, response_type = asks
            request_id = await ctx.request_info(request, response_type)
            ctx.state.setdefault(ASKED_KEY, {})[request_id] = message
            return
        await ctx.send_message(answer)

    def prompt_for(self, message: Any) -> str:
        """The prompt text sent for ``message`` (without the JSON instruction that a model
        without schema support gets for structured output)."""
        if self.instruction is not None:
            return self.instruction.render({"input": message})
        if isinstance(message, str):
            return message
        return json.dumps(message, ensure_ascii=False, default=str)

    def _failure(self, message: str) -> AgentError:
        return AgentError(message, executor_id=self.id, model_id=self.model_id)

    async def ask(self, message: Any, ctx: WorkflowContext[Any, Any] | None = None) -> Any:
        """Prompt the model with ``message``; the answer (text, or a dict with structured
        output). Streamed chunks go to ``ctx.add_event`` when a context is given.

        :raises AgentError: the model call failed, or its answer did not match
            ``structured_output`` twice (the message names the JSON path of the problem).
        """
        prompt = self.prompt_for(message)
        schema = self.structured_output
        if schema is None:
            return await self._call(prompt, None, ctx)
        if not self.uses_schema_api:
            prompt = f"{prompt}\n\n{json_instruction(schema)}"
        conversation = self.model.conversation()
        value, problem = self._check(await self._call(prompt, conversation, ctx), schema)
        if problem is None:
            return value
        if ctx is not None:  # a live display shows why a second answer follows
            await ctx.add_event({"structured_output_retry": problem})
        retry = correction(problem, schema)
        value, second = self._check(await self._call(retry, conversation, ctx), schema)
        if second is None:
            return value
        raise self._failure(
            f"the answer does not match structured_output, after one corrective retry: "
            f"{second} (first answer: {problem})"
        )

    @staticmethod
    def _check(text: str, schema: Mapping[str, Any]) -> tuple[Any, str | None]:
        value, problem = parse_answer(text)
        if problem is None:
            problem = answer_problem(value, schema)
        return value, problem

    async def _call(
        self, prompt: str, conversation: Any, ctx: WorkflowContext[Any, Any] | None
    ) -> str:
        """One model call in a worker thread: the whole answer's text.

        The call goes through :func:`plait.spi.outside_call` (kind ``llm.prompt``), the
        one interception point: its request is the model, prompt, system, the
        conversation so far, options, tools and schema; its answer the text, the usage,
        the tool calls, the model that answered and the finish reasons. A budget reserves
        it (and may pass on a cheaper ``model``: the call goes to that model), a tracer
        spans it, a recorded run keeps it; a replay answers it from the record. An answer
        given without the model (a replay's, a cassette's) streams as one chunk.
        """
        stream = bool(getattr(self.model, "can_stream", False)) and ctx is not None
        kwargs: dict[str, Any] = dict(self.options)
        if self.system is not None:
            kwargs["system"] = self.system
        if self.uses_schema_api:
            kwargs["schema"] = self.structured_output
        target = conversation if conversation is not None else self.model
        own_model = self.model_id

        tools = self.tools

        def call(model_id: str) -> dict[str, Any]:
            where = target
            if model_id != own_model:  # an answerer (a degrade budget) chose another model
                where = _switch_model(target, model_id)
            if tools:  # llm runs the chain: the model's tool calls, their results, its answer
                options = {k: v for k, v in kwargs.items() if k not in ("system", "schema")}
                response = where.chain(
                    prompt,
                    system=kwargs.get("system"),
                    schema=kwargs.get("schema"),
                    tools=tools,
                    options=options or None,
                    stream=stream,
                )
            else:
                response = where.prompt(prompt, stream=stream, **kwargs)
            if stream and ctx is not None:
                for chunk in response:
                    if chunk:
                        anyio.from_thread.run(ctx.add_event, {"token": chunk})
            return {"text": str(response.text()), **_usage_and_tool_calls(response)}

        made: list[bool] = []

        async def invoke(asked: Mapping[str, Any]) -> dict[str, Any]:
            made.append(True)
            model_id = str(asked.get("model") or own_model)
            return await anyio.to_thread.run_sync(call, model_id)

        request = {
            "model": own_model,
            "prompt": prompt,
            "system": self.system,
            "conversation": _turns(conversation),
            "options": self.options,
            "tools": [getattr(tool, "__name__", repr(tool)) for tool in tools],
            "schema": kwargs.get("schema"),
        }
        try:
            answer = await outside_call("llm.prompt", request, invoke)
        except BaseException as exc:  # a model plugin may raise anything: name the agent
            if not isinstance(exc, Exception) or getattr(exc, "refuses_call", False):
                raise  # an answerer refused the call (a budget): its error, as it is
            raise self._failure(f"{type(exc).__name__}: {exc}") from exc
        if stream and ctx is not None and not made and answer["text"]:
            # answered without the model (a replay, a cassette): the answer streams whole
            await ctx.add_event({"token": str(answer["text"])})
        if conversation is not None and getattr(conversation, "plait_turns", None) is not None:
            conversation.plait_turns.append({"prompt": prompt, "text": answer["text"]})
        return str(answer["text"])


def _turns(conversation: Any) -> list[dict[str, Any]]:
    """The exchanges of ``conversation`` so far (prompt and answer text), as the agent
    kept them: what a model call's record key holds of the conversation (a replay, whose
    conversation never reached the model, has the same)."""
    if conversation is None:
        return []
    turns = getattr(conversation, "plait_turns", None)
    if turns is None:
        turns = []
        try:
            conversation.plait_turns = turns
        except AttributeError:  # a conversation class that takes no new attributes
            return []
    return list(turns)


def _usage_and_tool_calls(response: Any) -> dict[str, Any]:
    """What an answer carries beside its text: the tokens it used (``None`` for a count
    the model plugin did not report), the tool calls of a chain (name and arguments), the
    model that answered and the finish reasons, as far as the model plugin tells them
    (what a budget settles with, a tracer's span shows and a record keeps)."""
    out: dict[str, Any] = {}
    responses = list(response.responses()) if hasattr(response, "responses") else [response]
    usage: dict[str, int | None] = {"input": 0, "output": 0}
    calls = []
    reasons: list[str] = []
    for one in responses:
        try:
            used = one.usage()
            for unit, count in (("input", used.input), ("output", used.output)):
                total = usage[unit]
                usage[unit] = None if count is None or total is None else total + int(count)
        except Exception:  # a model plugin without usage: nothing to keep
            usage = {"input": None, "output": None}
        try:
            for tool_call in one.tool_calls():
                calls.append({"name": tool_call.name, "arguments": tool_call.arguments})
        except Exception:
            pass
        reason = (getattr(one, "response_json", None) or {}).get("finish_reason")
        if isinstance(reason, str):
            reasons.append(reason)
    out["usage"] = usage
    if calls:
        out["tool_calls"] = calls
    last = responses[-1] if responses else None
    if last is not None:
        resolved = getattr(last, "resolved_model", None) or getattr(last.model, "model_id", None)
        if resolved:
            out["model"] = str(resolved)
    if reasons:
        out["finish_reasons"] = reasons
    return out


def _switch_model(target: Any, model_id: str) -> Any:
    """What to prompt once an answerer (a ``degrade`` budget) chose ``model_id``: that
    model, or the conversation carried over to it."""
    import llm

    model = llm.get_model(model_id)
    if hasattr(target, "responses"):  # a conversation: go on with the other model
        target.model = model
        return target
    return model


class AgentKind:
    """``agent``: ``{"model"?, "system"?, "instruction"?, "options"?, "structured_output"?,
    "tools"?}``.

    ``tools`` are Python functions the model may call, by ``module:attr``: importing them
    runs code, so a document may name them only when it is trusted to import
    (``allow_imports=True``, ``--allow-imports``).

    ``model`` defaults to the ``PLAIT_LLM_MODEL`` environment variable. The model is looked
    up, the instruction compiled, the options and the ``structured_output`` schema checked
    when the workflow is built, each problem at its JSON path. Any model can give structured
    output: through llm's schema API when it supports one, else by instruction (see
    :class:`AgentExecutor`).
    """

    config_schema: Mapping[str, Any] = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "agent executor (llm)",
        "type": "object",
        "properties": {
            "model": {
                "type": "string",
                "minLength": 1,
                "description": f"an llm model id or alias (default: ${MODEL_ENV})",
            },
            "system": {"type": "string", "description": "the system prompt"},
            "instruction": {
                "type": "string",
                "description": "a {{ }} template for the prompt, over {input: message}",
            },
            "options": {"type": "object", "description": "the model's options"},
            "structured_output": {
                "type": "object",
                "description": "a JSON Schema of an object: the agent sends the parsed, "
                "validated JSON object",
            },
            "tools": {
                "type": "array",
                "items": {"type": "string", "pattern": "^[A-Za-z_][\\w.]*:[A-Za-z_][\\w.]*$"},
                "description": "Python functions the model may call, as module:attr "
                "(imports: allowed only for a trusted document)",
            },
        },
        "additionalProperties": False,
    }

    def capabilities(self, config: Mapping[str, Any], ctx: BuildContext) -> set[Capability]:
        """A model is called over the network, at a host its llm plugin chooses (any
        host); ``tools`` are code to import."""
        found: set[Capability] = {network()}
        if config.get("tools"):
            found.add(IMPORTS)
        return found

    def check(self, config: Mapping[str, Any], ctx: BuildContext) -> list[ConfigError]:
        """Every problem of ``config``, each with its JSON path (``/config/options/x``)."""
        errors = check_config(self.config_schema, config, ctx.node_id, source=ctx.source)
        if errors:
            return errors
        model, errors = self._model(config, ctx)
        instruction = config.get("instruction")
        if instruction is not None:
            try:
                compile_template(instruction, source=ctx.source, manager=ctx.manager)
            except PlaitError as exc:
                errors.append(
                    config_error(
                        ctx.node_id,
                        f"instruction: {exc}",
                        "/config/instruction",
                        source=ctx.source,
                    )
                )
        schema = config.get("structured_output")
        if schema is not None:
            errors.extend(self._check_schema(schema, ctx))
        if model is not None and config.get("options"):
            errors.extend(self._check_options(config["options"], model, ctx))
        if config.get("tools"):
            errors.extend(self._tools(config["tools"], ctx)[1])
        return errors

    def _tools(self, refs: list[str], ctx: BuildContext) -> tuple[list[Any], list[ConfigError]]:
        """The tool functions, imported (only when the document may import code)."""
        if not ctx.allow_imports:
            message = (
                f"tools {', '.join(refs)} are Python code to import, and this document is "
                "not trusted to import code; "
                + spell(
                    "pass allow_imports=True if you trust it",
                    "pass --allow-imports if you trust it",
                )
            )
            return [], [config_error(ctx.node_id, message, "/config/tools", source=ctx.source)]
        found, errors = [], []
        for index, ref in enumerate(refs):
            try:
                tool = import_ref(ref)
            except Exception as exc:  # what importing it raised, named with its ref
                reason = f"tool {ref!r} does not import: {type(exc).__name__}: {exc}"
                errors.append(
                    config_error(ctx.node_id, reason, f"/config/tools/{index}", source=ctx.source)
                )
                continue
            if not callable(tool):
                reason = f"tool {ref!r} is not a function (got {type(tool).__name__})"
                errors.append(
                    config_error(ctx.node_id, reason, f"/config/tools/{index}", source=ctx.source)
                )
                continue
            found.append(tool)
        return found, errors

    def create(self, config: Mapping[str, Any], ctx: BuildContext) -> AgentExecutor:
        """The agent for ``config``.

        :raises ConfigError: the config is invalid (the first problem).
        """
        errors = self.check(config, ctx)
        if errors:
            raise errors[0]
        model, _ = self._model(config, ctx)
        instruction = config.get("instruction")
        return AgentExecutor(
            ctx.node_id,
            model,
            system=config.get("system"),
            instruction=(
                compile_template(instruction, source=ctx.source, manager=ctx.manager)
                if instruction is not None
                else None
            ),
            options=config.get("options"),
            structured_output=config.get("structured_output"),
            tools=self._tools(config["tools"], ctx)[0] if config.get("tools") else None,
        )

    def _model(self, config: Mapping[str, Any], ctx: BuildContext) -> tuple[Any, list[ConfigError]]:
        model_id = config.get("model") or os.environ.get(MODEL_ENV)
        if not model_id:
            message = f"'model' is required (or set the {MODEL_ENV} environment variable)"
            return None, [config_error(ctx.node_id, message, "/config/model", source=ctx.source)]
        import llm

        try:
            return llm.get_model(model_id), []
        except llm.UnknownModelError as exc:
            known = sorted({m.model_id for m in llm.get_models()} | set(llm.get_model_aliases()))
            did = did_you_mean(model_id, known)
            reason = exc.args[0] if exc.args else "unknown model"
            message = (
                f"{reason} (no installed llm plugin provides {model_id!r}: install one, e.g. "
                f"llm-anthropic or llm-ollama, and see `llm models`){did}"
            )
            return None, [config_error(ctx.node_id, message, "/config/model", source=ctx.source)]

    def _check_schema(self, schema: Mapping[str, Any], ctx: BuildContext) -> list[ConfigError]:
        from jsonschema import Draft202012Validator  # type: ignore[import-untyped,unused-ignore]
        from jsonschema.exceptions import SchemaError  # type: ignore[import-untyped,unused-ignore]

        try:
            Draft202012Validator.check_schema(schema)
        except SchemaError as exc:
            path = json_pointer(exc.absolute_path, root="/config/structured_output")
            return [
                config_error(
                    ctx.node_id, f"not a JSON Schema: {exc.message}", path, source=ctx.source
                )
            ]
        if schema.get("type") != "object":
            # the agent sends a dict (its handler says so, for the edges' type checks)
            message = (
                f"structured_output is the schema of a JSON object: its type must be "
                f"'object', not {schema.get('type')!r}"
            )
            path = "/config/structured_output/type"
            return [config_error(ctx.node_id, message, path, source=ctx.source)]
        return []

    def _check_options(
        self, options: Mapping[str, Any], model: Any, ctx: BuildContext
    ) -> list[ConfigError]:
        from pydantic import ValidationError

        try:
            model.Options(**options)
        except ValidationError as exc:
            return [
                config_error(
                    ctx.node_id,
                    f"option {'.'.join(map(str, err['loc'])) or '(all)'}: {err['msg']}",
                    json_pointer(err["loc"], root="/config/options"),
                    source=ctx.source,
                )
                for err in exc.errors()
            ]
        return []
