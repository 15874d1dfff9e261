"""Validate an executor kind's config against its JSON Schema, reporting every problem.

The helpers live in :mod:`plait_documents.build` (:func:`plait_documents.check_config`,
:func:`plait_documents.config_error`, :func:`plait_documents.json_pointer`), where every
plugin finds them; this module names them for code that imported them from here.
"""

from __future__ import annotations

from plait_documents import check_config, config_error, json_pointer

__all__ = ["check_config", "config_error", "json_pointer"]
