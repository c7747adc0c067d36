"""The ``sglang serve`` flags the reference server accepts without using them, and the ones it rejects.

The table is SGLang 0.5.23's ``ServerArgs.add_cli_args`` (``runtime/server_args/server_args.py``) and
``PipelineConfig.add_cli_args`` (``configs/pipeline_configs/base.py``), less the flags ``cli.py`` implements. They change how a real server places, parallelises, compiles
or caches a model, none of which exists on one CPU thread; the reference server parses them (so a
command line written for ``sglang serve`` starts it) and ignores them. Component flags SGLang reads
from the leftover arguments (``--<component>-path``, ``--<component>-weights-path``,
``--<component>-precision``, ``--<component>-quantization``, ``--<component>-attention-backend``,
``--<config>-config.<field>``) are accepted and ignored too.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Sequence
from enum import Enum
from typing import Any, NoReturn


class Arity(str, Enum):
    VALUE = "value"  # --flag VALUE
    MULTI = "multi"  # --flag V [V ...]
    BOOL = "bool"  # SGLang's StoreBoolean: --flag, --flag true, --flag false
    FLAG = "flag"  # store_true: --flag


VALUE, MULTI, BOOL, FLAG = Arity.VALUE, Arity.MULTI, Arity.BOOL, Arity.FLAG

IGNORED_FLAGS: tuple[tuple[tuple[str, ...], Arity], ...] = (
    (("--model-subfolder",), VALUE),
    (("--model-variant",), VALUE),
    (("--minimax-h3-adaln-online",), BOOL),
    (("--minimax-h3-adaln-plan-width",), VALUE),
    (("--minimax-h3-adaln-host-cache-gb",), VALUE),
    (("--minimax-h3-adaln-cache-path",), VALUE),
    (("--model-id",), VALUE),
    (("--served-model-name",), VALUE),
    (
        (
            "--pipeline",
            "--pipeline-class-name",
        ),
        VALUE,
    ),
    (("--load-diffusion-decoder",), BOOL),
    (("--attention-backend",), VALUE),
    (("--attention-backend-config",), VALUE),
    (("--component-attention-backends",), VALUE),
    (("--cache-dit-config",), VALUE),
    (("--trust-remote-code",), BOOL),
    (("--revision",), VALUE),
    (
        (
            "--performance-mode",
            "--mode",
        ),
        VALUE,
    ),
    (("--enable-nccl-nvls",), BOOL),
    (("--base-gpu-id",), VALUE),
    (("--nnodes",), VALUE),
    (("--node-rank",), VALUE),
    (("--dist-init-addr",), VALUE),
    (("--gpu-ids",), MULTI),
    (("--numa-node",), MULTI),
    (("--tp-size",), VALUE),
    (("--sp-degree",), VALUE),
    (("--ulysses-degree",), VALUE),
    (("--ring-degree",), VALUE),
    (("--encoder-parallel",), VALUE),
    (("--kv-gather-degree",), VALUE),
    (("--enable-cfg-parallel",), BOOL),
    (("--cfg-parallel-size",), VALUE),
    (
        (
            "--data-parallel-size",
            "--dp-size",
            "--dp",
        ),
        VALUE,
    ),
    (("--hsdp-replicate-dim",), VALUE),
    (("--hsdp-shard-dim",), VALUE),
    (("--dist-timeout",), VALUE),
    (("--scheduler-rpc-timeout",), VALUE),
    (("--prompt-file-path",), VALUE),
    (("--mask-strategy-file-path",), VALUE),
    (("--enable-torch-compile",), BOOL),
    (("--regional-compile",), BOOL),
    (("--offload-during-compile",), BOOL),
    (("--allow-cudnn-tf32",), BOOL),
    (("--allow-bf16-reduced-precision-reduction",), BOOL),
    (("--enable-breakable-cuda-graph",), BOOL),
    (("--bcg-text-buckets",), MULTI),
    (("--enable-layerwise-nvtx-marker",), BOOL),
    (("--component-residency",), MULTI),
    (("--dit-cpu-offload",), BOOL),
    (("--direct-gpu-weight-loading",), BOOL),
    (("--cpu-offload-components",), MULTI),
    (("--dit-layerwise-offload",), BOOL),
    (
        (
            "--layerwise-offload-components",
            "--layerwise-offload-modules",
        ),
        MULTI,
    ),
    (("--dit-offload-prefetch-size",), VALUE),
    (("--dit-layerwise-resident-layers",), VALUE),
    (("--layerwise-prefetch-size",), VALUE),
    (("--layerwise-resident-layers",), VALUE),
    (("--layerwise-residency-policy",), VALUE),
    (("--layerwise-residency-lifetime",), VALUE),
    (("--dit-layerwise-residency-policy",), VALUE),
    (("--dit-layerwise-residency-lifetime",), VALUE),
    (("--text-encoder-cpu-offload",), BOOL),
    (("--image-encoder-cpu-offload",), BOOL),
    (("--vae-cpu-offload",), BOOL),
    (("--use-fsdp-inference",), BOOL),
    (("--pin-cpu-memory",), BOOL),
    (("--ltx2-two-stage-device-mode",), VALUE),
    (("--disable-autocast",), BOOL),
    (("--kv-cache-quant",), VALUE),
    (("--kv-cache-quant-centroids",), VALUE),
    (("--kv-cache-quant-block-size",), VALUE),
    (("--kv-cache-quant-stages",), VALUE),
    (("--kv-cache-quant-iters",), VALUE),
    (("--kv-cache-quant-asymmetric",), FLAG),
    (("--kv-cache-quant-keep-recent",), VALUE),
    (("--kv-cache-quant-sink",), VALUE),
    (("--kv-cache-quant-sink-keep",), VALUE),
    (("--quantization",), VALUE),
    (("--quantization-ignored-layers",), MULTI),
    (("--master-port",), VALUE),
    (("--scheduler-port",), VALUE),
    (("--batching-mode",), VALUE),
    (("--batching-max-size",), VALUE),
    (("--batching-delay-ms",), VALUE),
    (("--batching-config",), VALUE),
    (("--enable-batching-metrics",), FLAG),
    (("--sleep-on-idle",), FLAG),
    (("--async-output-save",), FLAG),
    (("--http-graceful-shutdown-timeout",), VALUE),
    (("--enable-metrics",), BOOL),
    (("--webui",), BOOL),
    (("--webui-port",), VALUE),
    (("--input-save-path",), VALUE),
    (("--lora-nickname",), VALUE),
    (("--lora-scale",), VALUE),
    (("--lora-alpha",), VALUE),
    (("--lora-merge-mode",), VALUE),
    (("--lora-weight-name",), VALUE),
    (("--enable-trace",), FLAG),
    (("--otlp-traces-endpoint",), VALUE),
    (("--otlp-service-name",), VALUE),
    (("--log-requests",), FLAG),
    (("--log-requests-level",), VALUE),
    (("--log-requests-format",), VALUE),
    (("--log-requests-target",), MULTI),
    (("--enable-cache-report",), FLAG),
    (("--disable-conditioning-cache",), FLAG),
    (("--conditioning-cache-max-size-mb",), VALUE),
    (("--backend",), VALUE),
    (("--srt-encoder-url",), VALUE),
    (("--srt-encoder-connection-timeout",), VALUE),
    (("--srt-encoder-timeout",), VALUE),
    (("--pe-server-url",), VALUE),
    (("--prompt-enhancer-config",), VALUE),
    # PipelineConfig.add_cli_args (configs/pipeline_configs/base.py): the pipeline's own flags, which sglang serve
    # takes beside ServerArgs' (a case for SGLang's CPU path passes --text-encoder-precisions fp32 fp32)
    (("--vae-tiling",), BOOL),
    (("--diffusion-decoder-tiling",), BOOL),
    (("--diffusion-decoder-parallel-tiling",), BOOL),
    (("--vae-slicing",), BOOL),
    (("--vae-sp",), BOOL),
    (("--text-encoder-precisions",), MULTI),
    (("--dmd-denoising-steps",), VALUE),
    (("--realtime-causal-sink-size",), VALUE),
    (("--realtime-causal-kv-cache-num-frames",), VALUE),
)

REJECTED_FLAGS: dict[str, str] = {
    "--lora-path": "LoRA adapters are not supported by the reference server (tiny models with seeded weights)",
}

_COMPONENT_FLAG = re.compile(
    r"^--[a-z0-9_-]+-(path|weights-path|precision|quantization|quantization-ignored-layers|attention-backend"
    r"|direct-gpu-weight-loading)$|^--[a-z0-9_-]+-config\.[a-z0-9_.-]+$"
)


def is_component_flag(flag: str) -> bool:
    """A per-component flag SGLang reads from its leftover arguments (``--vae-path``, ``--vae-config.x``)."""
    return bool(_COMPONENT_FLAG.match(flag))


def parse_bool(text: str) -> bool:
    """SGLang's StoreBoolean values."""
    value = text.strip().lower()
    if value in ("true", "1", "yes", "on"):
        return True
    if value in ("false", "0", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


def bool_flag(parser: argparse._ActionsContainer, *names: str, help: str | None, dest: str | None = None) -> None:
    """A StoreBoolean flag: bare means true, else the value that follows."""
    if dest is None:
        parser.add_argument(*names, nargs="?", const=True, default=False, type=parse_bool, help=help)
    else:
        parser.add_argument(*names, nargs="?", const=True, default=False, type=parse_bool, help=help, dest=dest)


class _Reject(argparse.Action):
    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> NoReturn:
        flag = self.option_strings[0]
        parser.error(f"{flag}: {REJECTED_FLAGS[flag]}")


def add_sglang_flags(parser: argparse.ArgumentParser) -> None:
    """Add the accepted-and-ignored and the rejected ``sglang serve`` flags to ``parser``."""
    group = parser.add_argument_group("sglang serve flags accepted and ignored (no effect on one CPU thread)")
    for names, arity in IGNORED_FLAGS:
        dest = "ignored_" + names[0].lstrip("-").replace("-", "_")
        if arity is BOOL:
            bool_flag(group, *names, help=argparse.SUPPRESS, dest=dest)
        elif arity is FLAG:
            group.add_argument(*names, action="store_true", dest=dest, help=argparse.SUPPRESS)
        elif arity is MULTI:
            group.add_argument(*names, nargs="+", dest=dest, help=argparse.SUPPRESS)
        else:
            group.add_argument(*names, dest=dest, help=argparse.SUPPRESS)
    for flag in REJECTED_FLAGS:
        parser.add_argument(flag, action=_Reject, help=argparse.SUPPRESS)


def drop_component_flags(extra: list[str]) -> tuple[list[str], list[str]]:
    """Split leftover arguments into accepted component flags (with their values) and unknown ones."""
    accepted, unknown = [], []
    i = 0
    while i < len(extra):
        token = extra[i]
        flag = token.split("=", 1)[0]
        if token.startswith("--") and is_component_flag(flag):
            accepted.append(token)
            if "=" not in token and i + 1 < len(extra) and not extra[i + 1].startswith("--"):
                accepted.append(extra[i + 1])
                i += 1
        else:
            unknown.append(token)
        i += 1
    return accepted, unknown
