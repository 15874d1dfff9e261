"""The shop workflow's versions as targets of ``plait run`` / ``plait resume``
(``versions_cli_targets:shop_v1``), and the desk workflow's version 2 for ``plait compat
--dry-run``."""

from __future__ import annotations

import versions_desk
import versions_shop

shop_v1 = versions_shop.v1()
shop_v2 = versions_shop.v2()
desk_v2 = versions_desk.v2()
