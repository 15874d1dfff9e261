"""Pydantic (v2) models in checkpoints, through their own ``model_dump``/``model_validate``.

When pydantic is installed, plait-durable registers one :class:`plait_converters.CattrsHooks`
for ``pydantic.BaseModel`` through ``plait_register_type_hooks``, the hook every
plugin's own types use. The kernel's message converter dispatches a hook registered for
a class to its subclasses too, so every model class is covered: a model unstructures to
``model_dump(mode="json")`` (JSON-ready data, nested models and all) and structures back
with ``model_validate``.

The trust rule is the codec's: a checkpoint's value is rebuilt only into a class the
workflow declares (:func:`plait_durable.declared_types`: the models its handlers take,
send and yield, their fields' types, and the ``request_types``/``state_types`` of its
executors). A checkpoint naming any other model is refused; ``model_validate`` then
builds only the fields that declared model has.
"""

from __future__ import annotations

from typing import Any

from plait_converters import CattrsHooks

__all__ = ["HOOKS"]


def _unstructure(model: Any) -> Any:
    return model.model_dump(mode="json")


def _structure(data: Any, cls: Any) -> Any:
    return cls.model_validate(data)


def _hooks() -> CattrsHooks:
    import pydantic

    base: Any = pydantic.BaseModel
    if not hasattr(base, "model_validate"):
        raise ImportError(
            f"plait-durable encodes Pydantic models with pydantic 2's model_dump and "
            f"model_validate; pydantic {pydantic.VERSION} is installed"
        )
    return CattrsHooks(base, structure=_structure, unstructure=_unstructure, requires="pydantic")


#: The hooks for ``pydantic.BaseModel`` (registered lazily: importing this module imports
#: pydantic).
HOOKS = _hooks()
