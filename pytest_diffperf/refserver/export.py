"""The built-in tiny models written as diffusers model folders (``save_pretrained``), for real servers to load.

SGLang's diffusion server loads a model folder: ``model_index.json`` names the pipeline class, one
sub-folder per component. The modules and seeds are the reference server's (``modules.build_modules``),
so a real server and the reference server run the same weights. SGLang picks its native pipeline
config by the folder's name (``registry.py``: ``"flux.1" in path.lower()``, ``"wan2.1"`` and so on),
so each folder is named as SGLang's detectors expect (``EXPORTS``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from .specs import MODELS


@dataclass(frozen=True)
class Export:
    """A built-in model as a folder: the model, the folder's name, the diffusers pipeline that saves it."""

    model: str  # key of specs.MODELS
    folder: str  # named so that SGLang's registry detects the family from the path
    pipeline: str  # diffusers pipeline class whose save_pretrained writes the folder


EXPORTS: dict[str, Export] = {
    e.model: e
    for e in (
        Export("tiny/flux-t2i", "tiny-FLUX.1-dev", "FluxPipeline"),
        Export("tiny/flux-kontext-edit", "tiny-FLUX.1-Kontext-dev", "FluxKontextPipeline"),
        Export("tiny/wan-t2v", "tiny-Wan2.1-T2V-1.3B-Diffusers", "WanPipeline"),
        Export("tiny/wan-i2v", "tiny-Wan2.2-TI2V-5B-Diffusers", "WanImageToVideoPipeline"),
        Export("tiny/sd-t2i", "tiny-stable-diffusion", "StableDiffusionPipeline"),
    )
}


def export(model: str, root: Path) -> Path:
    """Write ``model``'s folder under ``root`` (replacing its files) and return it."""
    import diffusers

    from .modules import build_modules

    spec = EXPORTS[model]
    pipeline_class = getattr(diffusers, spec.pipeline)
    components = dict(build_modules(MODELS[model].family))
    pipeline = pipeline_class(**components, **_absent(pipeline_class, components))
    folder = root / spec.folder
    pipeline.save_pretrained(folder, safe_serialization=True)
    return folder


def _absent(pipeline_class: type, components: dict[str, object]) -> dict[str, None]:
    """The pipeline's optional components the tiny model does not have (an image encoder, a second transformer)."""
    optional = getattr(pipeline_class, "_optional_components", [])
    return {name: None for name in optional if name not in components}


def exported(root: Path, model: str) -> bool:
    """Whether ``model``'s folder under ``root`` is complete (its ``model_index.json`` names its pipeline)."""
    index = root / EXPORTS[model].folder / "model_index.json"
    try:
        return bool(json.loads(index.read_text()).get("_class_name") == EXPORTS[model].pipeline)
    except (OSError, ValueError):
        return False


def builtin_model(path: str) -> str | None:
    """The built-in model ``path`` names: its id, or a folder ``export`` wrote (by its last component); None for
    any other."""
    if path in MODELS:
        return path
    name = Path(path.rstrip("/")).name
    return next((e.model for e in EXPORTS.values() if e.folder == name), None)
