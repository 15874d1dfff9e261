"""Stand-ins for the models a cassette answers: a test replayed from a cassette needs the
model's name to resolve (an ``agent`` looks its model up when the workflow is built), not
the model itself. For each ``llm.prompt`` model a replaying cassette holds answers of and
that ``llm`` does not know (its plugin is not installed: a local model's weights, a
provider's client), the cassette registers, for its block, an ``llm`` model of that id
that never answers: the cassette answers its calls, and a call the cassette lacks is the
cassette's miss before it could reach the stand-in.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

__all__ = ["StandIns"]


class StandIns:
    """The stand-in models of one cassette block, registered with ``llm``'s plugin manager
    by :meth:`register` and taken away by :meth:`unregister`.

    :param interactions: the cassette's recorded calls.
    :param path: the cassette file, named in the stand-ins' refusal.
    """

    def __init__(self, interactions: Iterable[Mapping[str, Any]], path: str) -> None:
        #: model id -> whether a recorded request of it went through llm's schema API
        self.models: dict[str, bool] = {}
        for one in interactions:
            request = one.get("request")
            if one.get("kind") != "llm.prompt" or not isinstance(request, Mapping):
                continue
            model = request.get("model")
            if isinstance(model, str) and model:
                schema = request.get("schema") is not None
                self.models[model] = self.models.get(model, False) or schema
        self.path = path
        self._name: str | None = None

    def register(self) -> list[str]:
        """Register stand-ins for the models ``llm`` does not know; their ids (none when
        ``llm`` is not installed, or knows them all)."""
        if not self.models:
            return []
        try:
            import llm
        except ImportError:  # no llm: nothing asks for a model by name
            return []
        known = {m.model.model_id for m in llm.get_models_with_aliases()}
        known |= set(llm.get_model_aliases())
        missing = {mid: schema for mid, schema in self.models.items() if mid not in known}
        if not missing:
            return []
        path = self.path

        class StandIn(llm.Model):
            """A model the cassette answers for; it never answers itself."""

            can_stream = True

            def __init__(self, model_id: str, schema: bool) -> None:
                self.model_id = model_id
                self.supports_schema = schema

            def execute(
                self, prompt: Any, stream: bool, response: Any, conversation: Any
            ) -> Iterator[str]:
                raise RuntimeError(
                    f"model {self.model_id!r} is not installed: it stands in for the "
                    f"answers of cassette {path!r}, which has none for this call"
                )

        class Plugin:
            @llm.hookimpl
            def register_models(self, register: Any) -> None:
                for model_id, schema in missing.items():
                    register(StandIn(model_id, schema))

        self._name = f"plait-replay-stand-ins-{id(self)}"
        llm.plugins.pm.register(Plugin(), name=self._name)
        return sorted(missing)

    def unregister(self) -> None:
        """Take the stand-ins away (nothing when none were registered)."""
        if self._name is None:
            return
        import llm

        llm.plugins.pm.unregister(name=self._name)
        self._name = None
