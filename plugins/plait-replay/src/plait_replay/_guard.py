"""The network guard of a replay: while it is on, a connection to an internet address,
or a host name looked up, is a :class:`~plait_replay.ReplayNetworkError` naming the
executor whose invocation tried (from the recorder's :class:`plait.spi.OutsideCalls`
among the answerers of the running task), unless that executor is replayed live and the
attempt is its call.
Local (Unix) sockets are let through: the event loop's own wake-up pipes are sockets.
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Iterator
from typing import Any

from plait.spi import outside_calls

from ._errors import ReplayNetworkError
from ._recorder import _Site

__all__ = ["network_guard"]

_INTERNET = (socket.AF_INET, socket.AF_INET6)


def _refuse(address: Any, replaying: Any) -> None:
    # the recorder's answerer of the running invocation
    site = next((one for one in outside_calls.get() if isinstance(one, _Site)), None)
    executor = getattr(site, "executor_id", None)
    if executor is not None and getattr(site, "live_call", False):
        return  # a live executor's call, going out as asked
    where = f"executor {executor!r}" if executor is not None else "code outside any executor"
    hint = f" (pass --live {executor} to let its calls out)" if executor is not None else ""
    error = ReplayNetworkError(
        f"{where} tried to reach the network ({address}) during a replay: a replay "
        f"answers outside calls from the record, with the network shut{hint}",
        executor_id=executor,
        address=str(address),
    )
    replaying.network.append(error)
    raise error


@contextlib.contextmanager
def network_guard(replaying: Any) -> Iterator[None]:
    """Shut the network for the block (see the module)."""
    connect = socket.socket.connect
    connect_ex = socket.socket.connect_ex
    getaddrinfo = socket.getaddrinfo

    def guarded_connect(self: socket.socket, address: Any) -> None:
        if self.family in _INTERNET:
            _refuse(address, replaying)
        return connect(self, address)

    def guarded_connect_ex(self: socket.socket, address: Any) -> int:
        if self.family in _INTERNET:
            _refuse(address, replaying)
        return connect_ex(self, address)

    def guarded_getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        _refuse(f"{host}:{port}", replaying)
        return getaddrinfo(host, port, *args, **kwargs)

    socket.socket.connect = guarded_connect  # type: ignore[method-assign,assignment]
    socket.socket.connect_ex = guarded_connect_ex  # type: ignore[method-assign,assignment]
    socket.getaddrinfo = guarded_getaddrinfo
    try:
        yield
    finally:
        socket.socket.connect = connect  # type: ignore[method-assign]
        socket.socket.connect_ex = connect_ex  # type: ignore[method-assign]
        socket.getaddrinfo = getaddrinfo
