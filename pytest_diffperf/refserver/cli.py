"""``diffperf-refserver``: ``serve`` (a subset of ``sglang serve`` flags, plus fault injection) and ``models``."""

from __future__ import annotations

import argparse
import json
import logging
import os
import socket
import sys

from .faults import Faults, parse_delay
from .specs import MODELS

THREADS_ENV = "DIFFPERF_REFSERVER_THREADS"
WARMUP_KEYS = {
    "prompt",
    "negative_prompt",
    "size",
    "width",
    "height",
    "num_inference_steps",
    "guidance_scale",
    "num_frames",
}
DEFAULT_WARMUP = {"num_inference_steps": 2}
LOG_LEVELS = ("critical", "error", "warning", "info", "debug", "trace")


def _delay(text: str) -> tuple[str, float]:
    try:
        return parse_delay(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _json_object(text: str) -> dict:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError("must be a JSON object")
    unknown = set(value) - WARMUP_KEYS
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown keys {sorted(unknown)}; allowed: {sorted(WARMUP_KEYS)}")
    return value


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def _non_negative_float(text: str) -> float:
    value = float(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {value}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="diffperf-refserver", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("models", help="list the built-in models")

    serve = sub.add_parser("serve", help="serve one built-in model over HTTP")
    serve.add_argument(
        "--model-path",
        required=True,
        choices=sorted(MODELS),
        metavar="MODEL",
        help=f"built-in model: {', '.join(sorted(MODELS))}",
    )
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument(
        "--port",
        type=int,
        default=30000,
        help="0 lets the OS choose (printed on startup)",
    )
    serve.add_argument(
        "--num-gpus",
        type=int,
        default=1,
        help="accepted for sglang compatibility; runs on CPU",
    )
    serve.add_argument("--log-level", default="info", type=str.lower, choices=LOG_LEVELS)
    serve.add_argument(
        "--strict-ports",
        action="store_true",
        help="fail if the port is taken (the server never picks another port in any case)",
    )
    serve.add_argument(
        "--warmup-mode",
        choices=("server", "request"),
        default="server",
        help="server: one warmup generation before /health turns 200; "
        "request: the first request is preceded by an unlogged clone of itself",
    )
    serve.add_argument(
        "--warmup-sampling-params",
        type=_json_object,
        default=None,
        metavar="JSON",
        help=f"server warmup request, keys from {sorted(WARMUP_KEYS)} (default {DEFAULT_WARMUP})",
    )
    serve.add_argument("--model-type", choices=("diffusion",), default="diffusion")
    serve.add_argument(
        "--uvicorn-access-log-exclude-prefixes",
        nargs="*",
        default=[],
        metavar="PREFIX",
        help="leave requests whose path starts with one of these out of the access log",
    )
    serve.add_argument("--scheduler-port", type=int, help="accepted for sglang compatibility; no scheduler here")
    serve.add_argument("--master-port", type=int, help="accepted for sglang compatibility; no distributed workers")
    serve.add_argument(
        "--num-threads",
        type=_positive_int,
        default=None,
        help=f"torch CPU threads (default ${THREADS_ENV} or 1)",
    )
    serve.add_argument("--seed", type=int, default=42, help="default request seed; also seeds jitter")

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


def serve(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    spec = MODELS[args.model_path]
    warmup = args.warmup_sampling_params if args.warmup_sampling_params is not None else DEFAULT_WARMUP
    try:
        spec.params(seed=args.seed, **warmup)
    except (TypeError, ValueError) as exc:
        parser.error(f"--warmup-sampling-params: {exc}")
    threads = args.num_threads or int(os.environ.get(THREADS_ENV) or 1)
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

    from .app import ServerConfig, create_app

    level = "debug" if args.log_level == "trace" else args.log_level
    handler = logging.StreamHandler(sys.stderr)  # our logger only: library debug logs stay quiet
    handler.setFormatter(logging.Formatter("[refserver] %(levelname)s %(message)s"))
    logger = logging.getLogger("refserver")
    logger.addHandler(handler)
    logger.setLevel(level.upper())
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
    app = create_app(ServerConfig(spec, faults, args.warmup_mode, warmup, args.seed, threads))
    url_host = f"[{args.host}]" if ":" in args.host else args.host
    print(
        f"[refserver] serving {spec.name} at http://{url_host}:{port} (pid {os.getpid()}, {threads} thread(s))",
        flush=True,
    )
    config = uvicorn.Config(app, log_level=args.log_level, timeout_graceful_shutdown=3)
    if args.uvicorn_access_log_exclude_prefixes:
        logging.getLogger("uvicorn.access").addFilter(_PathFilter(tuple(args.uvicorn_access_log_exclude_prefixes)))
    uvicorn.Server(config).run(sockets=[sock])
    return 0


class _PathFilter(logging.Filter):
    """Drops uvicorn access-log records of paths starting with one of ``prefixes`` (args: client, method, path, ...)."""

    def __init__(self, prefixes: tuple[str, ...]):
        super().__init__()
        self.prefixes = prefixes

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args if isinstance(record.args, tuple) else ()
        return not (len(args) > 2 and str(args[2]).startswith(self.prefixes))


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "models":
        for spec in MODELS.values():
            extra = f" {spec.num_frames} frames @ {spec.fps} fps" if spec.task == "video" else ""
            print(f"{spec.name}\t{spec.task}\t{spec.width}x{spec.height}{extra}, {spec.steps} steps")
        return 0
    return serve(args, parser)
