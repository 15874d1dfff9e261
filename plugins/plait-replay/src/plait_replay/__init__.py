"""Record once, replay offline: Plait runs as tests.

A run with ``record=True`` (``plait run --record``) keeps, beside its checkpoints, every
call it makes outside the process — plait-llm's model calls, ``http`` and ``shell`` steps,
:meth:`plait.WorkflowContext.now` and :meth:`plait.WorkflowContext.random` — in the
checkpoints' content-addressed blobs, so an answer given twice is stored once.
:func:`replay` (``plait replay TARGET RUN_ID``) runs the workflow again with today's code,
answers those calls from the record with the network shut (an attempt is an error naming
the executor), compares the run superstep by superstep with the record and reports the
first divergence (:class:`ReplayReport`).

- :class:`ReplayOptions`: the run options this plugin declares (``record``,
  ``replay_with``);
- :func:`replay` and :class:`ReplayReport`, :class:`Divergence`: a replay and what it
  found; :func:`replay_superstep`: one superstep replayed from a checkpoint the caller
  gives and compared with the state it expects (``plait compat --dry-run``);
- :func:`read_recording` and :class:`Recording`: a recorded run as its record holds it;
- :func:`export_bundle`, :func:`import_bundle`, :class:`BundleInfo`: a recorded run as
  one portable file (``plait export``, ``plait import``), signed and redacted;
- :class:`ReplayError`, :class:`ReplayMissError`, :class:`ReplayNetworkError`,
  :class:`BundleError`: what a replay or a bundle refuses; :class:`RecordedCallError`: a
  call a cassette recorded failing, failing again.

Loading plugins imports this module alone: the recorder is imported when a run records or
replays, the command when the command line is used.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import plait
from plait.spi import Register, lazy_exports, observes_when

if TYPE_CHECKING:
    import click
    from plait.spi import RunObserver, RunOptions

    from ._bundle import (
        BundleError as BundleError,
        BundleInfo as BundleInfo,
        export_bundle as export_bundle,
        import_bundle as import_bundle,
    )
    from ._errors import (
        RecordedCallError as RecordedCallError,
        ReplayError as ReplayError,
        ReplayMissError as ReplayMissError,
        ReplayNetworkError as ReplayNetworkError,
    )
    from ._options import ReplayOptions as ReplayOptions
    from ._record import Recording as Recording, read_recording as read_recording
    from ._replay import (
        Divergence as Divergence,
        ReplayReport as ReplayReport,
        replay as replay,
    )
    from ._superstep import replay_superstep as replay_superstep


@plait.hookimpl
def plait_register_run_options(register: Register) -> None:
    """Declare ``record`` and ``replay_with`` (:class:`ReplayOptions`)."""
    from ._options import ReplayOptions

    register("replay", ReplayOptions)


#: the recorder's key in a checkpoint's ``observed`` section and ``metadata["observers"]``
#: (``plait_replay._record.SECTION``: written here too, so loading plugins imports nothing)
SECTION = "replay"


@observes_when(options=("record", "replay_with"), sections=(SECTION,))
@plait.hookimpl
def plait_observe_run(
    run_id: str, resumed: Mapping[str, Any] | None, options: RunOptions | None
) -> RunObserver | None:
    """Record the runs that set ``record`` (a replay sets it too), and the resumes of runs
    that were recorded (their checkpoints say so: a record goes on after a crash or an
    answer to a request, whoever resumes it): a few dictionary look-ups for a run that
    does not, which is declared (:func:`plait.spi.observes_when`) so that such a run does
    not import this module."""
    values = options.plugin_values if options is not None else {}
    replaying = values.get("replay_with")
    kept = resumed.get(SECTION) if isinstance(resumed, Mapping) else None
    # read from a store: it can only turn recording on, never choose what runs
    was_recorded = isinstance(kept, Mapping) and kept.get("record") is True
    if not values.get("record") and replaying is None and not was_recorded:
        return None
    from ._recorder import Recorder

    return Recorder(run_id, replaying, resumed=resumed is not None)


@plait.hookimpl(optionalhook=True)  # a hook of plait-cli's
def plait_register_commands(cli: click.Group) -> None:
    """Add ``plait replay``, ``plait export`` and ``plait import`` (their module is imported
    when one of them runs)."""
    from plait_cli import lazy_command

    for name, short_help in (
        ("replay", "Replay a recorded run offline; report the first divergence."),
        ("export", "Write a recorded run to one portable bundle file."),
        ("import", "Load a run bundle into a store."),
    ):
        cli.add_command(lazy_command(name, f"plait_replay._cli:{name}_command", short_help))


if not TYPE_CHECKING:  # type checkers read the block above: a misspelt name stays an error
    __getattr__, __dir__ = lazy_exports(__name__)
