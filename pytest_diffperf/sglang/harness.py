"""SGLang's own test harness of a release, run offline: the request ``get_generate_fn`` sends, the command its
``diffusion_server`` fixture starts.

``load`` runs the release's ``testcase_configs.py``, case files, ``test_server_utils.py`` and
``test_server_common.py`` on ``standins`` (as when the case lists are read), plus the few modules only
the harness imports: ``kill_process_tree`` (where the release keeps it), Slack upload (a no-op), the
realtime helpers, ``benchmarks.compare_perf``. ``request_of`` drives ``get_generate_fn`` through the
openai SDK the user has installed over an httpx ``MockTransport`` (nothing is sent); ``command_of``
runs the fixture until it spawns the server (``Popen`` records and stops there). ``decode`` parses a
captured request as the server parses it (``Body``).
"""

from __future__ import annotations

import contextlib
import email.message
import email.parser
import email.policy
import email.utils
import hashlib
import inspect
import io
import json
import os
import traceback
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import psutil

from ..errors import DiffperfError
from ..platforms import Platform
from . import caselist, guard, standins, task_types
from .source import SERVER_DIR, Source

MG = standins.MG
SERVER = caselist.SERVER
HARNESS_FILES = ("test_server_utils.py", "test_server_common.py")
# A multipart file field name -> the one the real edit endpoint reads it as (image_api.py: images = image or image[]).
FILE_FIELDS = {"image[]": "image"}
REALTIME_NAMES = (
    "RealtimeChunkStats",
    "build_realtime_init_payload",
    "collect_realtime_output",
    "encode_realtime_frames_to_mp4",
    "prepare_realtime_first_frame",
    "realtime_ws_url",
    "record_realtime_key_frames",
    "record_realtime_perf_stats",
    "pop_realtime_e2e_ms",
    "pop_realtime_key_frames",
    "pop_realtime_perf_stats",
    "validate_realtime_perf_stats",
)
PORT = 31234  # the fixture's port (SGLANG_TEST_SERVER_PORT): nothing listens, nothing is started


def kill_process_tree(parent_pid: int, include_parent: bool = True, skip_pid: int | None = None) -> None:
    """SGLang's ``kill_process_tree``: SIGKILL the process's descendants (and itself)."""
    try:
        parent = psutil.Process(parent_pid)
    except psutil.NoSuchProcess:
        return
    procs = [p for p in parent.children(recursive=True) if p.pid != skip_pid]
    procs += [parent] if include_parent else []
    for proc in procs:
        with contextlib.suppress(psutil.NoSuchProcess):
            proc.kill()


def _realtime_unsupported(*_args: Any, **_kwargs: Any) -> Any:
    raise NotImplementedError("realtime cases are not run by pytest-diffperf")


def _calculate_upper_bound(expected: float, tolerance: float, min_abs_tolerance: float) -> float:
    """``benchmarks/compare_perf.calculate_upper_bound`` (not in a wheel's test tree): the one limit formula."""
    return max(expected * (1 + tolerance), expected + min_abs_tolerance)


def harness_standins(root: Path) -> dict[str, ModuleType]:
    """The stand-ins the harness needs beyond the case files' (``kill_process_tree`` where ``root``'s release has it)."""
    common = standins.standin_modules(root, "h100")[f"{MG}.runtime.utils.common"]
    common.kill_process_tree = kill_process_tree  # type: ignore[attr-defined]  # 0.5.12-0.5.22 keep it here
    return {
        f"{MG}.runtime.utils.common": common,
        f"{MG}.runtime.utils.process": standins.module(
            f"{MG}.runtime.utils.process", kill_process_tree=kill_process_tree
        ),
        f"{SERVER}.common.slack": standins.module(
            f"{SERVER}.common.slack", upload_file_to_slack=lambda *_a, **_k: None
        ),
        f"{MG}.test.slack_utils": standins.module(
            f"{MG}.test.slack_utils", upload_file_to_slack=lambda *_a, **_k: None
        ),
        f"{SERVER}.realtime_consistency": standins.module(
            f"{SERVER}.realtime_consistency", **dict.fromkeys(REALTIME_NAMES, _realtime_unsupported)
        ),
        f"{MG}.benchmarks": standins.absent_module(f"{MG}.benchmarks"),
        f"{MG}.benchmarks.compare_perf": standins.module(
            f"{MG}.benchmarks.compare_perf", calculate_upper_bound=_calculate_upper_bound
        ),
    }


@dataclass(frozen=True)
class Harness:
    """SGLang's loaded modules (they keep working once loading is over), by role."""

    source: Source
    modules: dict[str, ModuleType]

    @property
    def configs(self) -> ModuleType:
        return self.modules[f"{SERVER}.testcase_configs"]

    @property
    def utils(self) -> ModuleType:
        return self.modules[f"{SERVER}.test_server_utils"]

    @property
    def common(self) -> ModuleType:
        return self.modules[f"{SERVER}.test_server_common"]

    @property
    def diffusion_server(self) -> Callable[..., Iterator[Any]]:
        """SGLang's ``diffusion_server`` fixture as the generator function it decorates, to run with a case:
        ``inspect.unwrap`` follows the ``__wrapped__`` that every pytest since 8.0 sets on a fixture."""
        fixture: Callable[..., Iterator[Any]] = inspect.unwrap(self.common.diffusion_server)
        return fixture


def load(
    source: Source,
    hardware: Platform = "h100",
    *,
    table: task_types.TaskTypeTable | None = None,
    extra: Mapping[str, ModuleType] | None = None,
    assumed: standins.Assumption | None = None,
) -> Harness:
    """SGLang's harness modules and the case files of ``hardware``, loaded fresh from ``source`` (``table`` and
    ``assumed`` answer the model registry, as ``caselist.load_with_standins``)."""
    require_files(source)
    modules = caselist.load_with_standins(
        source,
        hardware,
        table=table,
        extra={**harness_standins(source.root), **(extra or {})},
        also=HARNESS_FILES,
        assumed=assumed,
    )
    return Harness(source, modules)


def require_files(source: Source) -> None:
    """DiffperfError naming the harness files ``source`` lacks."""
    missing = [name for name in HARNESS_FILES if not (source.server_dir / name).is_file()]
    if missing:
        raise DiffperfError(
            f"this SGLang tree has no {', '.join(missing)}: nothing to verify against", source=str(source.server_dir)
        )


@dataclass(frozen=True)
class Body:
    """A request as the server parses it: path, fields (multipart values JSON-decoded), file parts by hash."""

    path: str
    fields: dict[str, Any]
    files: dict[str, str] = field(default_factory=dict)
    multipart: bool = False


def decode(path: str, content_type: str, content: bytes) -> Body:
    """JSON or multipart; None values dropped (the real server's request fields default to None)."""
    if content_type.startswith("application/json"):
        return Body(path, _without_none(json.loads(content)))
    if not content_type.startswith("multipart/form-data"):
        raise ValueError(f"unexpected content type {content_type!r}")
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
        b"Content-Type: " + content_type.encode() + b"\r\n\r\n" + content
    )
    fields: dict[str, Any] = {}
    files: dict[str, str] = {}
    for part in message.iter_parts():
        name = _disposition_param(part, "name")
        payload = part.get_payload(decode=True)
        if name is None or not isinstance(payload, bytes):
            raise ValueError(f"unexpected multipart part {part.items()!r}: a field needs a name and a body")
        if _disposition_param(part, "filename") is not None:
            files[FILE_FIELDS.get(name, name)] = hashlib.sha256(payload).hexdigest()
        else:
            text = payload.decode()
            try:
                fields[name] = json.loads(text)
            except json.JSONDecodeError:
                fields[name] = text
    return Body(path, _without_none(fields), files, multipart=True)


def _disposition_param(part: email.message.Message, param: str) -> str | None:
    """A Content-Disposition parameter; an RFC 2231 one (``name*=utf-8''...``) decoded, as servers do."""
    value = part.get_param(param, header="content-disposition")
    return email.utils.collapse_rfc2231_value(value) if isinstance(value, tuple) else value


def _without_none(fields: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in fields.items() if v is not None}


class HarnessFailed(Exception):
    """SGLang's own harness raised for a case (not a skip): its message names what raised and where."""


def _failed(what: str, exc: BaseException, source: Source) -> HarnessFailed:
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if Path(f.filename).is_relative_to(source.root)]
    where = f" at {frames[-1].filename}:{frames[-1].lineno}" if frames else ""
    return HarnessFailed(f"SGLang's {what} raised {type(exc).__name__}: {exc}{where}")


class Captured(Exception):
    """Raised once the request is recorded: nothing is sent anywhere."""


class Spawned(Exception):
    """Raised by the recording Popen: the command was built, nothing is started."""


@dataclass(frozen=True)
class Request:
    """What SGLang's harness did for a case: the generation function it chose and the request (None: it skipped)."""

    function: str
    body: Body | None
    skipped: str = ""


def request_of(harness: Harness, tc: Any, input_image: Path) -> Request:
    """The request SGLang's ``get_generate_fn`` sends for case ``tc``, through the installed openai SDK.

    Reference images resolve to ``input_image`` (SGLang would download them).
    """
    import httpx
    import openai

    seen: list[Body] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(decode(request.url.path, request.headers["content-type"], request.read()))
        raise Captured

    utils: Any = harness.utils  # SGLang's module: its attributes are SGLang's
    saved = utils.__dict__.get("download_image_from_url")
    utils.download_image_from_url = lambda url: input_image
    transport = httpx.Client(transport=httpx.MockTransport(handler))
    api = openai.OpenAI(
        api_key="-",
        base_url=f"http://127.0.0.1:{PORT}/v1",
        http_client=transport,  # type: ignore[arg-type]  # openai 3.x types it as its own httpx fork's Client
        max_retries=0,
    )
    where = str(harness.source.server_dir / HARNESS_FILES[0])
    name = "get_generate_fn"
    try:
        with guard.foreign_code(name, where):
            fn = utils.get_generate_fn(tc.server_args.model_path, tc.server_args.modality, tc.sampling_params)
            name = fn.__name__
            with contextlib.redirect_stdout(io.StringIO()):
                fn(tc.id, api)
    except (openai.APIConnectionError, Captured):  # openai 2.x wraps what the transport raised, 3.x does not
        pass
    except (DiffperfError, KeyboardInterrupt):
        raise
    except BaseException as exc:  # noqa: BLE001 (SGLang's code: a skip, else its failure said for the case)
        if type(exc).__name__ == "Skipped":  # pytest.skip's exception, a BaseException
            return Request(name, None, skipped=str(exc))
        raise _failed(name, exc, harness.source) from None
    finally:
        utils.download_image_from_url = saved
        transport.close()
    return Request(name, seen[0] if seen else None)


def command_of(harness: Harness, tc: Any, perf_dir: Path) -> tuple[list[str], dict[str, str]] | str:
    """(command, environment added to ``os.environ``) SGLang's fixture spawns for case ``tc``, or why it skipped."""
    spawned: list[tuple[list[str], dict[str, str]]] = []

    def popen(command: list[str], **kwargs: Any) -> Any:
        spawned.append((command, kwargs["env"]))
        raise Spawned

    utils: Any = harness.utils
    saved = utils.subprocess
    utils.subprocess = SimpleNamespace(Popen=popen, PIPE=-1, STDOUT=-2)
    fixture = harness.diffusion_server
    env = {"SGLANG_TEST_SERVER_PORT": str(PORT), "SGLANG_PERF_LOG_DIR": str(perf_dir)}
    saved_env = {k: os.environ.get(k) for k in (*env, "SGLANG_TEST_SERVE_ARGS")}
    os.environ.update(env)
    os.environ.pop("SGLANG_TEST_SERVE_ARGS", None)
    base = dict(os.environ)
    try:
        where = str(harness.source.server_dir / HARNESS_FILES[1])
        with guard.foreign_code("diffusion_server fixture", where), contextlib.redirect_stdout(io.StringIO()):
            next(fixture(tc))
    except Spawned:
        pass
    except BaseException as exc:
        if isinstance(exc, DiffperfError | KeyboardInterrupt):
            raise
        if type(exc).__name__ != "Skipped":
            raise _failed("diffusion_server fixture", exc, harness.source) from None
        return str(exc) or "skipped"
    finally:
        utils.subprocess = saved
        for key, value in saved_env.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    command, spawned_env = spawned[0]
    return command, {k: v for k, v in spawned_env.items() if base.get(k) != v}


def has_harness(source: Source) -> bool:
    """Whether ``source`` holds SGLang's harness files (``test_server_utils.py``, ``test_server_common.py``)."""
    return all((source.root / SERVER_DIR / name).is_file() for name in HARNESS_FILES)
