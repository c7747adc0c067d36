"""The launcher interface for framework authors: everything a launcher needs, from one import.

A framework is a ``Launcher`` subclass (a command builder plus a request adapter) registered with
``register_launcher`` or declared in the ``pytest_diffperf.launchers`` entry-point group (see
docs/compare.md). The implementation lives in ``serving``.
"""

from __future__ import annotations

from .serving.client import Output as Output
from .serving.client import RequestError as RequestError
from .serving.client import check_media as check_media
from .serving.client import request_body as request_body
from .serving.launchers import ENTRY_POINT_GROUP as ENTRY_POINT_GROUP
from .serving.launchers import Launcher as Launcher
from .serving.launchers import ReferenceLauncher as ReferenceLauncher
from .serving.launchers import ServerSpec as ServerSpec
from .serving.launchers import get_launcher as get_launcher
from .serving.launchers import register_launcher as register_launcher
