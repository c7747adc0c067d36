"""CLIP image embeddings with open_clip: weights found offline, model loaded once per process.

``pretrained`` is an open_clip tag (looked up in the local Hugging Face / open_clip caches only),
a local ``.bin``/``.safetensors``/``.pt``/``.pth`` file, or ``none`` (seeded random init, for
offline tests). Nothing is ever downloaded: open_clip is imported with ``HF_HUB_OFFLINE=1`` unless it is
set, and the environment is then put back as it was (open_clip's import also sets
``TOKENIZERS_PARALLELISM``), since the servers the plugin starts later inherit it.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._util.atomicfile import write_atomic
from ..errors import DiffperfError

if TYPE_CHECKING:
    import numpy as np

DEFAULT_MODEL = "ViT-L-14"  # the architecture SGLang's thresholds were set with ...
DEFAULT_PRETRAINED = "openai"  # ... and its weights
TINY_MODEL = "diffperf-tiny"  # a ~0.1M-parameter architecture for offline tests (with pretrained="none")
_TINY_CONFIG = {
    "embed_dim": 32,
    "vision_cfg": {"image_size": 32, "layers": 2, "width": 64, "patch_size": 8, "head_width": 32},
    "text_cfg": {"context_length": 8, "vocab_size": 512, "width": 32, "heads": 2, "layers": 1},
}
WEIGHT_SUFFIXES = (".bin", ".safetensors", ".pt", ".pth")
RANDOM_SEED = 0
_PREPROCESS_KEYS = ("mean", "std", "interpolation", "resize_mode")
_CLIP_CACHE = Path("~/.cache/clip")  # where open_clip keeps weights fetched by URL
_HOW_TO = (
    "provide them in one of these ways: fetch once with network access "
    "(HF_HUB_OFFLINE=0 python -c \"import open_clip; open_clip.create_model('{model}', pretrained='{tag}')\" "
    "fills the Hugging Face cache, see HF_HOME / HF_HUB_CACHE); or pass --diffperf-clip-pretrained "
    "/path/to/weights.safetensors; or --diffperf-clip-pretrained none (seeded random init: for tests "
    "only, SGLang's thresholds do not apply to it)"
)


@dataclass(frozen=True)
class Weights:
    """Resolved weights: a local file (None for a random init) and what identifies them."""

    path: str | None
    ident: str  # part of the GT embedding cache key
    quick_gelu: bool = False
    preprocess: tuple[tuple[str, Any], ...] = ()


class Embedder:
    """One loaded CLIP model: embeds a batch of uint8 RGB frames to L2-normalised vectors."""

    def __init__(self, model_name: str, weights: Weights):
        open_clip = _open_clip()
        import torch
        from open_clip.transform import PreprocessCfg, image_transform_v2

        self.model_name = model_name
        self.weights = weights
        self.images_embedded = 0  # how many frames went through the model, for tests and logs
        try:
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(RANDOM_SEED)
                model = open_clip.create_model(
                    model_name,
                    pretrained=weights.path,
                    force_quick_gelu=weights.quick_gelu,
                    force_preprocess_cfg=dict(weights.preprocess),
                    pretrained_image=False,
                    pretrained_text=False,
                )
        except Exception as exc:  # noqa: BLE001 (open_clip raises bare RuntimeError/KeyError/... for bad checkpoints)
            raise DiffperfError(
                f"cannot build open_clip model {model_name!r} with weights {weights.path or 'none'}: {exc}",
                source="--diffperf-clip-pretrained",
            ) from None
        self._model = model.eval()
        self._preprocess = image_transform_v2(PreprocessCfg(**model.visual.preprocess_cfg), is_train=False)

    @property
    def key(self) -> str:
        return f"{self.model_name}|{self.weights.ident}"

    def embed(self, frames: list[np.ndarray]) -> np.ndarray:
        """``(len(frames), dim)`` float32 embeddings, computed in one batch."""
        import torch
        from PIL import Image

        batch = torch.stack([self._preprocess(Image.fromarray(f)) for f in frames])
        with torch.inference_mode():
            out = self._model.encode_image(batch, normalize=True)
        self.images_embedded += len(frames)
        embeddings: np.ndarray = out.float().numpy()
        return embeddings


_LOADED: dict[tuple[str, str], Embedder] = {}


def get_embedder(model_name: str, pretrained: str) -> Embedder:
    """The process-wide embedder for a model and weights, loaded on first use."""
    key = (model_name, pretrained)
    if key not in _LOADED:
        _LOADED[key] = Embedder(model_name, resolve_weights(model_name, pretrained))
    return _LOADED[key]


def resolve_weights(model_name: str, pretrained: str) -> Weights:
    """Check the model name and find its weights locally; one DiffperfError saying what to do."""
    open_clip = _open_clip()
    _register_tiny(open_clip)
    if open_clip.get_model_config(model_name) is None:
        known = open_clip.list_models()
        raise DiffperfError(
            f"unknown open_clip model {model_name!r}; {len(known)} are known, e.g. {', '.join(known[:12])} "
            f"(all: python -c 'import open_clip; print(open_clip.list_models())'); "
            f"{TINY_MODEL!r} is a tiny architecture for offline tests",
            source="--diffperf-clip-model",
        )
    if pretrained.strip().lower() == "none":
        import torch

        return Weights(None, f"none:seed={RANDOM_SEED}:torch={torch.__version__}:open_clip={open_clip.__version__}")
    if pretrained.lower().endswith(WEIGHT_SUFFIXES) or os.sep in pretrained or "/" in pretrained:
        path = Path(pretrained).expanduser()
        if not path.is_file():
            raise DiffperfError(f"weights file {path} does not exist", source="--diffperf-clip-pretrained")
        stat = path.stat()
        return Weights(str(path), f"file:{path.resolve()}:{stat.st_size}:{stat.st_mtime_ns}")
    cfg = open_clip.get_pretrained_cfg(model_name, pretrained)
    if not cfg:
        tags = open_clip.list_pretrained_tags_by_model(model_name)
        raise DiffperfError(
            f"{pretrained!r} is neither a weights file ({', '.join(WEIGHT_SUFFIXES)}) nor a pretrained tag of "
            f"{model_name} (tags: {', '.join(tags) or 'none'}); use 'none' for a seeded random init",
            source="--diffperf-clip-pretrained",
        )
    candidates = _cached_candidates(cfg)
    found = next((path for _, path in candidates if path is not None and path.is_file()), None)
    if found is None:
        raise DiffperfError(
            f"weights {model_name}/{pretrained} are not in the local cache (looked for: "
            f"{', '.join(where for where, _ in candidates)}) and nothing is downloaded; "
            + _HOW_TO.format(model=model_name, tag=pretrained),
            source="--diffperf-clip-pretrained",
        )
    preprocess = tuple((k, cfg[k]) for k in _PREPROCESS_KEYS if k in cfg)
    return Weights(str(found), f"tag:{pretrained.lower()}", bool(cfg.get("quick_gelu")), preprocess)


def _open_clip() -> Any:
    """open_clip, imported offline, with ``os.environ`` (which servers started later inherit) left as it was."""
    saved = dict(os.environ)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # huggingface_hub reads it when it is imported
    try:
        import open_clip
    finally:
        for key in {*saved, *os.environ}:
            if key not in saved:
                del os.environ[key]
            elif os.environ.get(key) != saved[key]:
                os.environ[key] = saved[key]
    return open_clip


def _cached_candidates(cfg: dict[str, Any]) -> list[tuple[str, Path | None]]:
    """Where open_clip would have stored a tag's weights, as (description, local path or None)."""
    from huggingface_hub import try_to_load_from_cache
    from huggingface_hub.constants import HF_HUB_CACHE
    from open_clip.constants import HF_SAFE_WEIGHTS_NAME, HF_WEIGHTS_NAME

    out: list[tuple[str, Path | None]] = []
    if cfg.get("file"):
        out.append((cfg["file"], Path(cfg["file"])))
    if cfg.get("hf_hub"):
        repo, filename = os.path.split(cfg["hf_hub"])
        filename = filename or HF_WEIGHTS_NAME
        if filename == HF_WEIGHTS_NAME:  # safetensors first, as open_clip does
            names = [HF_SAFE_WEIGHTS_NAME, filename]
        elif filename.endswith((".bin", ".pth")):
            names = [filename[:-4] + ".safetensors", filename]
        else:
            names = [filename]
        for name in names:
            hit = try_to_load_from_cache(repo, name)
            out.append((f"{HF_HUB_CACHE}: {repo}/{name}", Path(hit) if isinstance(hit, str) else None))
    if cfg.get("url"):
        path = _CLIP_CACHE.expanduser() / os.path.basename(cfg["url"])
        out.append((str(path), path))
    return out


def _register_tiny(open_clip: Any) -> None:
    """Make TINY_MODEL known to open_clip (it reads architectures from JSON files only)."""
    if open_clip.get_model_config(TINY_MODEL) is not None:
        return
    with tempfile.TemporaryDirectory(prefix="diffperf-open-clip-") as folder:  # private, fresh, then gone
        path = Path(folder) / f"{TINY_MODEL}.json"
        write_atomic(path, json.dumps(_TINY_CONFIG).encode())
        open_clip.add_model_config(path)  # reads the file now; later rescans skip a missing path
