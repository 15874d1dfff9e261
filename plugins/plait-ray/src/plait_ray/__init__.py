"""Plait placement ``ray``: executor invocations run on a Ray cluster.

A node or workflow with ``placement="ray"`` sends each invocation — the executor's spec,
the message, its state and the shared state, all encoded with the checkpoint codec — to a
Ray actor that rebuilt the executor from its spec; what the invocation did comes back and
the driver applies it as it applies a local invocation. The runner stays on the driver.

Connecting: a Ray already initialised in this process (``ray.init(address=...)``) is used
as it is; else ``RAY_ADDRESS`` (or :func:`configure`'s ``address``) names a cluster to
join; else a local cluster is started for the process. Importing this package (which every
``plait`` command does, to load plugins) does not import Ray.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from plait import hookimpl
from plait.spi import Register, lazy, lazy_exports

if TYPE_CHECKING:
    from ._placement import (
        RayPlacement as RayPlacement,
        configure as configure,
        placement as placement,
    )
    from .errors import (
        RemoteInvocationError as RemoteInvocationError,
        WorkerLostError as WorkerLostError,
    )


@hookimpl
def plait_register_placements(register: Register) -> None:
    """Register the ``ray`` placement (imported, with Ray, when a workflow first uses it)."""
    register("ray", lazy("plait_ray._placement:placement", provides=("invoke",)))


# each name is imported on first use (loading plugins imports this module only)
if not TYPE_CHECKING:  # type checkers read the block above: a misspelt name stays an error
    __getattr__, __dir__ = lazy_exports(__name__)
