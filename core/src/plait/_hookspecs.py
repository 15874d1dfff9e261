"""Every hook Plait calls, with the contract each implementation must keep.

Hooks are synchronous: they register or observe. What they register (executors,
stores) may be async. A coroutine hook implementation is rejected at registration.

Registry hooks receive a ``register`` callback with the signature
``register(name: str, obj: object, *, replaces: str | None = None)``. The kernel checks
``obj`` against the protocol of its kind at once, stamps it with the distribution that
registered it, and refuses a name another plugin already registered unless ``replaces``
names that plugin's distribution. What there is one of (the durability, the documents
machinery) comes from a ``firstresult`` hook instead: the first plugin to answer gives it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

import pluggy

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from ._observer import RunObserver

__all__ = ["hookspec", "hookimpl", "Register"]

#: Marks a hook specification of Plait (project name ``plait``).
hookspec = pluggy.HookspecMarker("plait")
#: Marks a hook implementation of a Plait plugin: ``@plait.hookimpl``.
hookimpl = pluggy.HookimplMarker("plait")


class Register(Protocol):
    """The callback every registry hook receives."""

    def __call__(self, name: str, obj: Any, *, replaces: str | None = None) -> None:
        """Register ``obj`` under ``name``; ``replaces`` names a distribution to override."""


# ---------------------------------------------------------------------------
# Hooks of plugins: a plugin that calls hooks of its own declares them.
# ---------------------------------------------------------------------------


@hookspec(historic=True)
def plait_addhooks(pluginmanager: Any) -> None:
    """Declare the hooks a plugin calls, for the plugins that extend it (pytest's
    ``pytest_addhooks``): ``pluginmanager.add_hookspecs(module)`` adds the ``plait_*``
    hook specifications of ``module``, as this module's are (``plait-cli`` declares the
    columns and commands that other plugins add to it).

    Called for every plugin as it is registered, whatever the order: a plugin loaded
    before the one that declares a hook may implement it. What a plugin implements is
    checked against the declared hooks once every installed plugin is loaded; a plugin
    that implements a hook of an optional plugin marks it
    ``@hookimpl(optionalhook=True)``, so that it loads where that plugin is not installed.

    :param pluginmanager: the :class:`plait.spi.PluginManager` registering the plugin.
    :return: nothing; every implementation is called.
    """


# ---------------------------------------------------------------------------
# Registries: called once per plugin when the plugin manager builds its registries.
# ---------------------------------------------------------------------------


@hookspec
def plait_register_executor_kinds(register: Register) -> None:
    """Register named executor kinds (see :class:`plait.spi.ExecutorKind`).

    A kind is an :class:`~plait.spi.ExecutorKind`: a JSON Schema ``config_schema``,
    ``check(config, ctx)`` returning every config problem with its JSON path, and
    ``create(config, ctx)`` building the executor. Declarative front-ends and
    :meth:`plait.Workflow.from_spec` build executors from data through them (``python`` by
    import path, ``shell``, ``http``, ``workflow``, ``agent`` …). A kind also declares its
    ``capabilities`` (see :mod:`plait_documents`): what a node of it may make Plait do,
    which a loaded document must be granted.

    :param register: ``register(kind_name, kind, replaces=None)``.
    :return: nothing; every implementation is called.
    """


@hookspec
def plait_register_routers(register: Register) -> None:
    """Register edge routers: how messages cross an edge group.

    A router is an object with ``stateful: bool`` and
    ``create(group: EdgeGroupSpec, params: Mapping[str, Any], env: RouterEnv) -> EdgeRunner``
    (see :class:`plait.spi.Router`); its name is the one it is registered under. Routers
    with state (fan-in buffers) snapshot and restore it.

    :param register: ``register(router_name, router, replaces=None)``.
    :return: nothing; every implementation is called.
    """


@hookspec
def plait_register_merge_strategies(register: Register) -> None:
    """Register merge strategies for fan-in (see :class:`plait.spi.MergeStrategy`).

    A merge strategy has ``merge(values, sources) -> Any`` and
    ``output_type(input_type) -> type``; its name is the one it is registered under.

    :param register: ``register(strategy_name, strategy, replaces=None)``.
    :return: nothing; every implementation is called.
    """


@hookspec
def plait_register_converters(register: Register) -> None:
    """Register message converters (see :class:`plait.spi.Converter`).

    A converter is a ``Converter(source, target, fn, lossless, name, cost)`` record; the
    builder chains converters to connect edges whose types differ (``plait-converters``
    searches the chain).

    :param register: ``register(converter_name, converter, replaces=None)``.
    :return: nothing; every implementation is called.
    """


@hookspec
def plait_register_type_hooks(register: Register) -> None:
    """Register cattrs hooks for a plugin's own message type
    (``plait_converters.CattrsHooks``: ``type``, ``structure``, ``unstructure``).

    ``plait_converters.message_converter`` applies them, so messages of that type turn into
    JSON-ready data and back (checkpoints, the record converters). They are not
    converters: no edge of the converter graph.

    :param register: ``register(name, hooks, replaces=None)``.
    :return: nothing; every implementation is called.
    """


@hookspec
def plait_register_checkpoint_stores(register: Register) -> None:
    """Register checkpoint stores by URL scheme (see ``plait_durable.CheckpointStore``).

    The registered object is a factory ``factory(url: str) -> CheckpointStore``
    (``plait_durable.CheckpointStoreFactory``); the durability opens stores with it
    (``plait_durable.open_store``), the kernel never does.

    :param register: ``register(scheme, factory, replaces=None)`` — for example
        ``register("sqlite", SqliteStore.from_url)``.
    :return: nothing; every implementation is called.
    """


@hookspec
def plait_register_loaders(register: Register) -> None:
    """Register front-ends that turn text into a workflow (flow DSL, JSON DAG, YAML steps).

    A loader (:class:`plait.spi.Loader`) has ``suffixes``, ``load(text, ctx:
    BuildContext) -> WorkflowSpec`` raising :class:`~plait.LoadError` with every
    problem and its position, and optionally ``detect(text) -> bool``.
    :func:`plait.load` picks one by ``format=``, by suffix or by detection.

    :param register: ``register(loader_name, loader, replaces=None)``.
    :return: nothing; every implementation is called.
    """


@hookspec
def plait_register_fragments(register: Register) -> None:
    """Register named, reusable workflow fragments a distribution publishes.

    A fragment has a ``name`` (``"textkit.summarize"``), a ``version``, a contract (input
    and output types) and a factory returning a builder; ``add_workflow("textkit.summarize")``
    composes it.

    :param register: ``register(fragment_name, fragment, replaces=None)``.
    :return: nothing; every implementation is called.
    """


@hookspec
def plait_register_agents(register: Register) -> None:
    """Register named, ready-made agents a distribution publishes, so a workflow file (a
    flow, a JSON DAG, a YAML steps document) can name them.

    An agent is an :class:`~plait.Executor`, an ``async def`` function, or an agent as
    data: a ``plait_documents.AgentDefinition`` or a mapping in the schema of a
    document's ``agents:`` section (``{"model": ..., "instruction": ...}``, ``{"kind":
    ..., "config": ...}``), which ``plait-documents`` reads. Names resolve in one order
    (``plait_documents.AgentNames``):
    ``executors=``, the document's ``agents:``, these, then ``--agents MODULE``.

    :param register: ``register(agent_name, agent, replaces=None)``.
    :return: nothing; every implementation is called.
    """


@hookspec
def plait_register_expression_languages(register: Register) -> None:
    """Register safe expression languages for conditions and ``{{ }}`` templates.

    A language is an :class:`~plait.spi.ExpressionLanguage`: ``compile(text, *,
    source, line, column)`` and ``compile_template(...)`` return compiled objects that
    evaluate over JSON-like data only. The first-party language is named ``"plait"``.

    :param register: ``register(language_name, language, replaces=None)``.
    :return: nothing; every implementation is called.
    """


@hookspec
def plait_register_exporters(register: Register) -> None:
    """Register graph exporters (``mermaid``, ``dot`` …).

    An exporter has ``export(spec: WorkflowSpec) -> str``;
    :meth:`plait.Workflow.export` (and ``to_mermaid``/``to_dot``) look them up by name.

    :param register: ``register(format_name, exporter, replaces=None)``.
    :return: nothing; every implementation is called.
    """


@hookspec
def plait_register_placements(register: Register) -> None:
    """Register placements: where executor invocations run.

    See :class:`plait.spi.Placement`. A placement has
    ``async invoke(graph, executor_id, handler, message, ctx)``, which runs one invocation
    somewhere and applies what it did to ``ctx`` as a local
    invocation would. ``local`` (anyio tasks on the driver) is built in and is the
    default; ``ray`` comes with ``plait-ray``. A node or workflow chooses one by name
    (``placement="ray"``); names are resolved when the workflow is built.

    :param register: ``register(placement_name, placement, replaces=None)``.
    :return: nothing; every implementation is called.
    """


@hookspec
def plait_register_schedules(register: Register) -> None:
    """Register schedules: how a run's supersteps run, when not with a barrier each.

    A schedule is a :class:`plait.spi.Schedule` (``pays``, ``start``, ``decode_cut``);
    ``RunOptions.schedule`` names one (``"superstep"``, the default, is the kernel's own
    loop and is not registered). The runner hands it the supersteps it says it runs
    better, and takes the run back when the schedule hands it back in lockstep; a
    checkpointed run's cuts go through the runner's commit seam
    (:meth:`plait.spi.RunCommit.after_cut`). A schedule's own options are run options its
    plugin declares (``plait_register_run_options``). ``pipelined`` comes with
    ``plait-pipeline``; without it, a run asking for it fails as it starts, naming the
    distribution to install.

    :param register: ``register(schedule_name, schedule, replaces=None)``.
    :return: nothing; every implementation is called.
    """


@hookspec
def plait_register_run_options(register: Register) -> None:
    """Declare run options: what ``Workflow.run(message, **options)`` (and ``stream``,
    ``resume``, a workflow's ``options``) accepts beyond the kernel's own.

    A group of options is an attrs class whose fields all have defaults (keyword-only,
    validators raising :class:`~plait.RunOptionError`): each field is an option, named
    like the field. The kernel merges the groups of every plugin, refuses a name two of
    them (or a plugin and the kernel) declare, builds a run's object of a group from the
    options it sets, and rejects an unknown name listing every option by the
    distribution that declares it. The plugin reads its own with
    :meth:`plait.spi.RunOptions.of`. ``plait-durable`` declares ``checkpoint`` and the
    options of durable runs; ``plait-pipeline``, ``max_lead``.

    :param register: ``register(group_name, options_class, replaces=None)``.
    :return: nothing; every implementation is called.
    """


@hookspec
def plait_provided_names() -> Mapping[str, Mapping[str, Sequence[str]]] | None:
    """Say which distribution provides names that may not be installed here, so that an
    unknown name says what to install.

    The answer is ``{distribution: {kind: [name, ...]}}``. The kernel asks only when a
    lookup fails (an unknown router, store scheme, executor kind …), and adds
    " — it comes with plait-redis (…)" to the error, how to install it in the brackets
    (``plait_install_hint``). A distribution
    knows its own names, which helps nobody when it is missing; what knows the others is
    a catalog installed beside them: ``plait-catalog``, which ``pip install plait``
    brings, lists the first-party plugins. When two answers name different distributions
    for one name, the first distribution in sorted order wins.

    :return: distribution -> kind (``router``, ``checkpoint_store`` …) -> names, or
        ``None`` (nothing to say); every implementation is called.
    """


@hookspec(firstresult=True)
def plait_install_hint(distribution: str) -> str | None:
    """Say how to install ``distribution``, for the error of an unknown name it provides
    (see ``plait_provided_names``).

    The answer replaces the kernel's own words, "install the distribution plait-redis",
    which name no command: whoever knows where a distribution is published (an index, a
    checkout's workspace, an extra of a meta package) says it here, as commands that work.
    ``plait-catalog`` answers for the first-party distributions.

    :param distribution: the distribution the unknown name comes with.
    :return: the instructions (one line, no trailing full stop), or ``None`` (not one of
        yours); stops at the first non-``None`` answer.
    """


# ---------------------------------------------------------------------------
# The one of each: asked when the kernel first needs it; the first plugin to answer wins.
# ---------------------------------------------------------------------------


@hookspec(firstresult=True)
def plait_durability() -> Any:
    """Give what makes runs durable (see :class:`plait.spi.Durability`).

    :meth:`plait.Workflow.run` with ``checkpoint=``, :meth:`~plait.Workflow.resume`,
    :meth:`~plait.Workflow.pending_requests` and :attr:`~plait.Workflow.fingerprint` call it:
    it opens and closes the checkpoint store a URL names, writes checkpoints through the runner's
    commit seam (:class:`plait.spi.RunCommit`), and rebuilds runs from them.
    ``plait-durable`` gives it; without it, those calls fail naming the distribution to
    install. The kernel checks the object against the protocol and keeps it until the
    plugins change.

    :return: the durability (a :class:`plait.spi.Durability`), or ``None`` to leave it to
        another plugin; stops at the first
        non-``None`` result (``tryfirst=True`` puts a replacement before ``plait-durable``).
    """


@hookspec(firstresult=True)
def plait_documents() -> Any:
    """Give what loads workflow documents (see :class:`plait.spi.Documents`).

    :func:`plait.load` calls it: it reads the text, picks a loader
    (``plait_register_loaders``), resolves the document's agent names
    (``plait_register_agents``), checks the capabilities the document needs against what
    the caller grants, and builds the workflow. ``plait-documents`` gives it; without it,
    :func:`plait.load` fails naming the distribution to install.

    :return: the documents machinery (a :class:`plait.spi.Documents`), or ``None`` to
        leave it to another plugin; stops at the first non-``None`` result.
    """


# ---------------------------------------------------------------------------
# Composition: what a built workflow needs to be composed into a builder.
# ---------------------------------------------------------------------------


@hookspec(firstresult=True)
def plait_workflow_as_connection(workflow: Any, prefix: str | None) -> Any:
    """Turn a built workflow into a connection a builder composes (the design's
    ``Workflow.as_connection``): its topology cloned into a new builder, with its start,
    exits, contract and ports.

    :meth:`plait.Workflow.as_connection` calls it. ``plait-builders`` answers with a
    ``plait_builders.WorkflowConnection``; without it, the call fails naming that
    distribution.

    :param workflow: the :class:`plait.Workflow` (never changed).
    :param prefix: the prefix its executors get when composed (``None``: its name).
    :return: the connection, or ``None`` to leave it to another plugin; stops at the first
        non-``None`` result.
    """


@hookspec(firstresult=True)
def plait_workflow_as_agent(workflow: Any, name: str | None, description: str) -> Any:
    """Turn a built workflow into an agent a team takes as a participant (the design's
    ``Workflow.as_agent``): the conversation in, a message back, each turn one nested run
    checkpointed inside the team's run.

    :meth:`plait.Workflow.as_agent` calls it. ``plait-teams`` answers with a
    ``plait_teams.WorkflowParticipant``; without it, the call fails naming that
    distribution.

    :param workflow: the :class:`plait.Workflow` (never changed).
    :param name: the participant's name (``None``: the workflow's name).
    :param description: what it does, for a manager that picks speakers.
    :return: the participant, or ``None`` to leave it to another plugin; stops at the
        first non-``None`` result.
    """


# ---------------------------------------------------------------------------
# Observing runs: tracing, metrics, progress. When no plugin implements the hook, runs
# are not observed at all and pay nothing for it.
# ---------------------------------------------------------------------------


@hookspec
def plait_observe_run(
    run_id: str,
    workflow: Any,
    superstep: int,
    resumed: Mapping[str, Any] | None,
    options: Any,
) -> RunObserver | None:
    """A run starts: return a :class:`~plait.spi.RunObserver` to be told about its
    supersteps and executor invocations, or ``None`` to leave it alone.

    Called for every run — fresh, resumed (``superstep`` > 0) and nested (a workflow run
    as an executor of another) — in the task that runs it, so the caller's context
    variables are visible (the current OpenTelemetry span, for one). When no plugin
    implements this hook, runs are not observed at all and pay nothing for it.

    :param run_id: the run's id.
    :param workflow: the :class:`plait.Workflow` being run.
    :param superstep: the superstep the run continues after (0 for a new run).
    :param resumed: for a resumed run, what its observers kept with the checkpoint it
        resumes from (:meth:`~plait.spi.RunObserver.checkpoint_metadata`, all of
        them merged), else ``None``. It was read from a store: check it before use.
        An implementation may leave this parameter out.
    :param options: the run's :class:`~plait.spi.RunOptions` (a plugin reads its own
        declared options with :meth:`~plait.spi.RunOptions.of`: ``plait-replay``
        observes the runs that set ``record``, ``plait-budgets`` only a run that sets
        ``budget``). An implementation may leave it out.
    :return: an observer or ``None``; every implementation is called and the observers
        returned are all told (each gets back only its own handles).
    """
