"""The xdist scheduler of ``--dist loadgroup`` under the plugin: one server group per worker at a time.

xdist's own loadgroup keys on an ``xdist_group`` marker and renames node ids (``id@group``), which
pytest >= 9.2 no longer allows; this one keys on the scenario's server group, so node ids stay
``<file>::<scenario>``. Imported only on the xdist controller.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from xdist.scheduler import LoadScopeScheduling

from ..serving.launchers import ServerSpec


class ServerGroupScheduling(LoadScopeScheduling):
    """``LoadScopeScheduling`` whose scope is the server group: ``baselines.json::flux_a`` -> its spec's key."""

    def __init__(self, config: Any, log: Any, spec_of: Callable[[str], ServerSpec | None]):
        super().__init__(config, log)
        self.spec_of = spec_of

    def _split_scope(self, nodeid: str) -> str:
        spec = self.spec_of(nodeid.rsplit("::", 1)[-1])
        return spec.key if spec is not None else nodeid
