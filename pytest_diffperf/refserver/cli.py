"""``diffperf-refserver``: ``serve`` (``sglang serve``'s command line, plus fault injection) and ``models``.

``serve`` takes every ``sglang serve`` flag: the ones listed here are used, the rest are accepted and
ignored or rejected with a message (see ``sglang_flags``). Unknown flags exit 2, as argparse does.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import socket
import sys
from pathlib import Path
from typing import Any

from .._util.lifecycle import exit_as
from ..protocol import FORKSERVER_ENV
from .export import EXPORTS, builtin_model, export, exported
from .faults import Faults, parse_delay
from .forkserver import serve_forked, serve_forks
from .memory import SNAPSHOT_MODES
from .sglang_flags import add_sglang_flags, bool_flag, drop_component_flags
from .specs import MODELS, ModelSpec, parse_size
from .worker import ServerConfig, warmup_request

THREADS_ENV = "DIFFPERF_REFSERVER_THREADS"
MAX_PORT = 65535
LOG_LEVELS = ("critical", "error", "warning", "info", "debug", "trace")
WARMUP_MODES = ("off", "request", "server")


DESCRIPTION = (
    "The CPU reference server bundled with pytest-diffperf: tiny diffusers pipelines with seeded weights, "
    "served with SGLang's command line, HTTP API and performance log, with faults to inject on demand "
    "(delays per stage or step, jitter, crashes, hangs). `serve` starts one; `models` lists the built-in models."
)


def _delay(text: str) -> tuple[str, float]:
    try:
        return parse_delay(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _model(text: str) -> str:
    """A built-in model, named by its id or by a folder ``export`` wrote (the same modules and seeds): as given, for
    the routes that report the model path (SGLang reports ``--model-path`` as given)."""
    if builtin_model(text) is None:
        raise argparse.ArgumentTypeError(
            f"{text!r} is neither a built-in model ({', '.join(sorted(MODELS))}) nor a folder of one written by "
            f"`diffperf-refserver export` ({', '.join(e.folder for e in EXPORTS.values())})"
        )
    return text


def _json_object(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError("must be a JSON object")
    return value


def _size(text: str) -> str:
    try:
        parse_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def _port(text: str) -> int:
    value = int(text)
    if not 0 <= value <= MAX_PORT:
        raise argparse.ArgumentTypeError(f"must be a port from 0 to {MAX_PORT}, got {value}")
    return value


def _non_negative_float(text: str) -> float:
    value = float(text)
    if not (math.isfinite(value) and value >= 0):
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0, got {text!r}")
    return value


def _threads(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """``--num-threads``, else ``$DIFFPERF_REFSERVER_THREADS``, else 1 (a usage error if the variable is no count)."""
    if args.num_threads:
        return int(args.num_threads)
    text = os.environ.get(THREADS_ENV) or "1"
    try:
        return _positive_int(text)
    except (ValueError, argparse.ArgumentTypeError):
        parser.error(f"${THREADS_ENV}: expected a number of threads >= 1, got {text!r}")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="diffperf-refserver", description=DESCRIPTION)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser(
        "models",
        help="list the built-in models",
        description="List the built-in models (tiny, seeded, built on CPU): each one's id, task, default size and steps.",
    )

    exporter = sub.add_parser(
        "export",
        help="write built-in models as diffusers model folders (for a real server, such as sglang serve)",
        description="Write each MODEL (or every built-in model with --all) as a diffusers model folder under DIR, "
        "named so that SGLang detects its family (tiny-FLUX.1-dev, ...): the reference server's modules and seeds. "
        "A folder already complete is kept unless --force.",
    )
    exporter.add_argument("dir", metavar="DIR", help="the folder to write the model folders into")
    exporter.add_argument("models", nargs="*", metavar="MODEL", help=f"built-in model: {', '.join(sorted(EXPORTS))}")
    exporter.add_argument("--all", action="store_true", help="every built-in model")
    exporter.add_argument("--force", action="store_true", help="write folders that are already complete again")

    forks = sub.add_parser(
        "forkserver",
        help="import the server's libraries once and fork each serve (servers start in 0.5 s, not 5)",
        description="Listen on SOCKET, import torch, transformers and diffusers once, and fork a child for each "
        f"`serve` started with {FORKSERVER_ENV}=PID:SOCKET in its environment (docs/refserver.md).",
    )
    forks.add_argument("--socket", required=True, metavar="SOCKET", help="the Unix socket to listen on")

    serve = sub.add_parser("serve", help="serve one built-in model over HTTP")
    serve.add_argument(
        "--model-path",
        required=True,
        type=_model,
        metavar="MODEL",
        help=f"built-in model: {', '.join(sorted(MODELS))}; or a folder `export` wrote (its name says which)",
    )
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (default: %(default)s)")
    serve.add_argument(
        "--port",
        type=_port,
        default=30000,
        help="0 lets the OS choose (printed on startup)",
    )
    serve.add_argument(
        "--num-gpus",
        type=_positive_int,
        default=1,
        help="reported in /v1/models and used to align video frame counts, as SGLang does; runs on CPU",
    )
    serve.add_argument(
        "--log-level",
        default="info",
        type=str.lower,
        choices=LOG_LEVELS,
        help="server log level (default: %(default)s)",
    )
    bool_flag(serve, "--strict-ports", help="accepted for sglang compatibility: the server never picks another port")
    serve.add_argument(
        "--warmup-mode",
        choices=WARMUP_MODES,
        default="server",
        help="server: warmup generation(s) before /health turns 200; request: the first request is preceded "
        "by an unlogged clone of itself; off: no warmup",
    )
    serve.add_argument(
        "--warmup-sampling-params",
        type=_json_object,
        default=None,
        metavar="JSON",
        help="fields of the server warmup request (keys the reference models have no use for, such as "
        "quality, are accepted and ignored)",
    )
    serve.add_argument("--warmup-resolutions", nargs="+", type=_size, metavar="WxH", help="one warmup per size")
    serve.add_argument("--warmup-num-frames", type=_positive_int, metavar="N", help="frames of a video warmup")
    serve.add_argument("--warmup-steps", type=_positive_int, metavar="N", help="denoise steps of the warmup")
    serve.add_argument("--output-path", default=None, help="write every output there (default: keep them in memory)")
    serve.add_argument(
        "--request-files-dir",
        metavar="DIR",
        help="file paths in requests (perf_dump_path written, input_reference read) must lie in DIR; "
        "default: none is accepted (SGLang accepts any path)",
    )
    serve.add_argument(
        "--uvicorn-access-log-exclude-prefixes",
        nargs="*",
        default=[],
        metavar="PREFIX",
        help="leave requests whose path starts with PREFIX out of the access log",
    )
    serve.add_argument(
        "--memory-snapshots",
        choices=SNAPSHOT_MODES,
        default="device",
        help="device (as SGLang): load/runtime/warmup snapshots only with a device, so none here; always: "
        "write them anyway, device figures 0 and the lifetime host-anon peak (a reference-server extension)",
    )
    serve.add_argument(
        "--model-type", choices=("diffusion",), default="diffusion", help="accepted as sglang serve's: diffusion only"
    )
    serve.add_argument(
        "--num-threads",
        type=_positive_int,
        default=None,
        help=f"torch CPU threads (default ${THREADS_ENV} or 1)",
    )
    serve.add_argument("--seed", type=int, default=42, help="default request seed; also seeds jitter")
    add_sglang_flags(serve)

    inject = serve.add_argument_group("fault injection (non-warmup requests only)")
    inject.add_argument(
        "--inject-delay",
        type=_delay,
        action="append",
        default=[],
        metavar="STAGE=MS",
        help="sleep MS inside STAGE, or inside denoise step N with step:N=MS (0-based); repeatable",
    )
    inject.add_argument(
        "--inject-jitter",
        type=_non_negative_float,
        default=0.0,
        metavar="PCT",
        help="extra sleep per stage (per step inside DenoisingStage) of up to PCT%% of its time",
    )
    inject.add_argument(
        "--inject-crash-on-request",
        type=_positive_int,
        metavar="N",
        help="os._exit(1) at the start of denoising of the N-th request (1-based)",
    )
    inject.add_argument(
        "--inject-hang-on-request",
        type=_positive_int,
        metavar="N",
        help="the N-th request blocks forever; /health keeps answering 200",
    )
    inject.add_argument(
        "--inject-fail-startup",
        action="store_true",
        help="print an error and exit 1 before ready",
    )
    inject.add_argument(
        "--inject-output-noise",
        type=_non_negative_float,
        default=0.0,
        metavar="SIGMA",
        help="add seeded Gaussian noise of std SIGMA (pixel range [0, 1]) to decoded outputs",
    )
    inject.add_argument(
        "--inject-load-delay",
        type=_non_negative_float,
        default=0.0,
        metavar="MS",
        help="sleep MS before building the model (delays the load marker)",
    )
    return parser


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    return sock


def warmup_runs(args: argparse.Namespace) -> list[dict[str, Any]]:
    """One dict of warmup-request fields per warmup run, from the ``--warmup-*`` flags."""
    fields = dict(args.warmup_sampling_params or {})
    if args.warmup_num_frames is not None:
        fields["num_frames"] = args.warmup_num_frames
    if args.warmup_steps is not None:
        fields["num_inference_steps"] = args.warmup_steps
    return [{**fields, "size": size} for size in args.warmup_resolutions] if args.warmup_resolutions else [fields]


class _AccessLogFilter(logging.Filter):
    def __init__(self, prefixes: list[str]):
        super().__init__()
        self.prefixes = tuple(prefixes)

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        path = args[2] if isinstance(args, tuple) and len(args) > 2 else ""
        return not (isinstance(path, str) and path.startswith(self.prefixes))


def _spec(args: argparse.Namespace) -> ModelSpec:
    model = builtin_model(args.model_path)
    assert model is not None  # checked by _model
    return MODELS[model]


def checked_warmups(args: argparse.Namespace, parser: argparse.ArgumentParser) -> list[dict[str, Any]]:
    """``warmup_runs``, each checked as a request of the model (a usage error, exit 2, if one is not)."""
    runs = warmup_runs(args)
    for run in runs:
        try:
            warmup_request(_spec(args), run, seed=args.seed, num_gpus=args.num_gpus)
        except (TypeError, ValueError) as exc:
            parser.error(f"--warmup-sampling-params: {exc}")
    return runs


def serve(args: argparse.Namespace, runs: list[dict[str, Any]], threads: int) -> int:
    spec = _spec(args)
    for var in (
        "OMP_NUM_THREADS",
        "MKL_NUM_THREADS",
    ):  # read when torch is imported, on the worker thread
        os.environ[var] = str(threads)

    try:
        sock = _bind(args.host, args.port)
    except OSError as exc:
        print(
            f"diffperf-refserver: error: cannot listen on {args.host}:{args.port}: {exc.strerror or exc}"
            " (port taken?); not trying another port",
            file=sys.stderr,
            flush=True,
        )
        return 1
    port = sock.getsockname()[1]

    import uvicorn

    from .app import create_app

    level = "debug" if args.log_level == "trace" else args.log_level
    handler = logging.StreamHandler(sys.stderr)  # our logger only: library debug logs stay quiet
    handler.setFormatter(logging.Formatter("[refserver] %(levelname)s %(message)s"))
    logger = logging.getLogger("refserver")
    logger.addHandler(handler)
    logger.setLevel(level.upper())
    if args.uvicorn_access_log_exclude_prefixes:
        logging.getLogger("uvicorn.access").addFilter(_AccessLogFilter(args.uvicorn_access_log_exclude_prefixes))
    faults = Faults(
        delays_ms=dict(args.inject_delay),
        jitter_pct=args.inject_jitter,
        crash_on_request=args.inject_crash_on_request,
        hang_on_request=args.inject_hang_on_request,
        fail_startup=args.inject_fail_startup,
        output_noise=args.inject_output_noise,
        load_delay_ms=args.inject_load_delay,
        seed=args.seed,
    )
    config = ServerConfig(
        spec,
        faults,
        warmup_mode=args.warmup_mode,
        warmup_params=runs,
        default_seed=args.seed,
        num_threads=threads,
        num_gpus=args.num_gpus,
        memory_snapshots=args.memory_snapshots,
        output_path=args.output_path,
        request_files_dir=args.request_files_dir,
        model_path=args.model_path,
    )
    app = create_app(config)
    url_host = f"[{args.host}]" if ":" in args.host else args.host
    print(
        f"[refserver] serving {spec.name} at http://{url_host}:{port} (pid {os.getpid()}, {threads} thread(s))",
        flush=True,
    )
    uvicorn_config = uvicorn.Config(app, log_level=args.log_level, timeout_graceful_shutdown=3)
    uvicorn.Server(uvicorn_config).run(sockets=[sock])
    return 0


def export_models(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """``export``: each model's folder, written unless complete; one line per model."""
    models = sorted(EXPORTS) if args.all else args.models
    if not models:
        parser.error("export: name a MODEL or pass --all")
    unknown = [m for m in models if m not in EXPORTS]
    if unknown:
        parser.error(f"export: unknown model {unknown[0]!r}; built-in: {', '.join(sorted(EXPORTS))}")
    root = Path(args.dir)
    for model in models:
        if exported(root, model) and not args.force:
            print(f"{model}: {root / EXPORTS[model].folder} (kept)")
            continue
        print(f"{model}: {export(model, root)}", flush=True)
    return 0


def main(argv: list[str] | None = None, fork: bool = True) -> int:
    """The command line; ``serve`` runs as a fork server's child when its environment names one and ``fork``."""
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    _, unknown = drop_component_flags(extra)
    if unknown:
        parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    if args.command == "models":
        for spec in MODELS.values():
            print(f"{spec.name}\t{spec.task_type.value}\t{spec.width}x{spec.height}, {spec.steps} steps")
        return 0
    if args.command == "export":
        return export_models(args, parser)
    if args.command == "forkserver":
        return serve_forks(args.socket, lambda argv: main(argv, fork=False))
    runs = checked_warmups(args, parser)
    threads = _threads(args, parser)
    if fork:
        code = serve_forked(sys.argv[1:] if argv is None else list(argv))
        if code is not None:
            exit_as(code)
    return serve(args, runs, threads)
