"""Validate an executor kind's config against its JSON Schema, reporting every problem.

The helpers live in :mod:`plait.spi` (:func:`plait.spi.check_config`,
:func:`plait.spi.config_error`, :func:`plait.spi.json_pointer`), where every plugin finds
them; this module names them for code that imported them from here.

.. versionadded:: 0.1
"""

from __future__ import annotations

from plait.spi import check_config, config_error, json_pointer

__all__ = ["check_config", "config_error", "json_pointer"]
