"""CLIP embeddings with random-init weights, and the offline weight lookup's errors."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import numpy as np
import pytest

from pytest_diffperf.consistency import clip
from pytest_diffperf.consistency.clip import TINY_MODEL
from pytest_diffperf.consistency.metrics import cosine
from pytest_diffperf.errors import DiffperfError

from .synth import scene


@pytest.fixture(scope="module")
def embedder() -> clip.Embedder:
    return clip.get_embedder(TINY_MODEL, "none")


def test_an_image_is_most_similar_to_itself(embedder):
    a, b = scene(1), scene(2)
    noise = np.random.default_rng(0).integers(0, 256, a.shape, dtype=np.uint8)
    ea, ea2, eb, en = embedder.embed([a, a.copy(), b, noise])
    assert np.linalg.norm(ea) == pytest.approx(1.0, abs=1e-6)
    assert cosine(ea, ea2) == pytest.approx(1.0, abs=1e-5)
    assert cosine(ea, eb) < 0.999
    assert cosine(ea, en) < cosine(ea, eb)


def test_batch_equals_one_by_one(embedder):
    frames = [scene(i) for i in range(3)]
    batch = embedder.embed(frames)
    single = np.concatenate([embedder.embed([f]) for f in frames])
    np.testing.assert_allclose(batch, single, atol=1e-6)


def test_random_init_is_seeded(embedder):
    fresh = clip.Embedder(TINY_MODEL, clip.resolve_weights(TINY_MODEL, "none"))
    frames = [scene(5)]
    np.testing.assert_array_equal(fresh.embed(frames), embedder.embed(frames))
    assert fresh.images_embedded == 1


def test_model_loads_once_per_process(embedder):
    assert clip.get_embedder(TINY_MODEL, "none") is embedder


def test_local_weights_file(tmp_path, embedder):
    from safetensors.torch import save_file

    path = tmp_path / "tiny.safetensors"
    save_file(embedder._model.state_dict(), str(path))
    weights = clip.resolve_weights(TINY_MODEL, str(path))
    assert weights.path == str(path) and weights.ident.startswith(f"file:{path}")
    frames = [scene(3)]
    np.testing.assert_array_equal(clip.Embedder(TINY_MODEL, weights).embed(frames), embedder.embed(frames))


def test_unusable_weights_file(tmp_path):
    path = tmp_path / "broken.pt"
    path.write_bytes(b"not a checkpoint")
    with pytest.raises(DiffperfError, match=r"--diffperf-clip-pretrained: cannot build open_clip model"):
        clip.Embedder(TINY_MODEL, clip.resolve_weights(TINY_MODEL, str(path)))


@pytest.mark.parametrize(
    "model, pretrained, message",
    [
        (
            "ViT-Nope",
            "none",
            r"--diffperf-clip-model: unknown open_clip model 'ViT-Nope'.*ViT-L-14|--diffperf-clip-model",
        ),
        (TINY_MODEL, "/no/such/weights.safetensors", r"weights file /no/such/weights.safetensors does not exist"),
        (
            "ViT-L-14",
            "laion9000",
            r"'laion9000' is neither a weights file .* nor a pretrained tag of ViT-L-14 \(tags: openai",
        ),
    ],
)
def test_bad_option_values(model, pretrained, message):
    with pytest.raises(DiffperfError, match=message):
        clip.resolve_weights(model, pretrained)


@pytest.fixture
def empty_caches(tmp_path, monkeypatch):
    """Point the Hugging Face and open_clip weight caches at an empty folder."""
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hf"))
    monkeypatch.setattr(clip, "_CLIP_CACHE", tmp_path / "clip")
    return tmp_path / "hf"


def test_weights_not_cached_fail_fast_and_say_how_to_provide_them(empty_caches):
    start = time.monotonic()
    with pytest.raises(DiffperfError) as err:
        clip.resolve_weights("ViT-L-14", "openai")
    assert time.monotonic() - start < 2  # no download attempt, no retry loop
    msg = str(err.value)
    assert "weights ViT-L-14/openai are not in the local cache" in msg
    assert "timm/vit_large_patch14_clip_224.openai/open_clip_model.safetensors" in msg
    assert "HF_HUB_OFFLINE=0 python -c" in msg and "--diffperf-clip-pretrained none" in msg


def test_cached_tag_is_found_offline(empty_caches):
    snapshot = empty_caches / "models--timm--vit_large_patch14_clip_224.openai" / "snapshots" / "abc123"
    snapshot.mkdir(parents=True)
    (snapshot / "open_clip_model.safetensors").write_bytes(b"x")
    (snapshot.parent.parent / "refs").mkdir()
    (snapshot.parent.parent / "refs" / "main").write_text("abc123")
    weights = clip.resolve_weights("ViT-L-14", "openai")
    assert weights.path == str(snapshot / "open_clip_model.safetensors")
    assert weights.quick_gelu  # OpenAI's weights need QuickGELU, as in SGLang's transformers CLIP
    assert dict(weights.preprocess)["interpolation"] == "bicubic"
    assert weights.ident == "tag:openai"


def test_the_tiny_architecture_is_registered_without_leaving_a_file(tmp_path, monkeypatch):
    import open_clip
    import open_clip.factory

    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    monkeypatch.delitem(open_clip.factory._MODEL_CONFIGS, TINY_MODEL, raising=False)
    monkeypatch.setattr(open_clip.factory, "_MODEL_CONFIG_PATHS", list(open_clip.factory._MODEL_CONFIG_PATHS))
    clip._register_tiny(open_clip)
    assert open_clip.get_model_config(TINY_MODEL)["embed_dim"] == 32
    assert list(tmp_path.iterdir()) == []  # the config file's private folder is gone
    open_clip.add_model_config(tmp_path / "missing")  # a later rescan keeps it
    assert open_clip.get_model_config(TINY_MODEL) is not None


@pytest.mark.server  # a fresh interpreter importing torch and open_clip: seconds
def test_importing_open_clip_leaves_the_environment_servers_inherit_as_it_was():
    """open_clip's import sets TOKENIZERS_PARALLELISM, and HF_HUB_OFFLINE is set for it: neither stays in
    ``os.environ``, which every server the plugin starts later inherits (and the test suite's fork server
    compares), while huggingface_hub keeps working offline. A fresh interpreter: this one may have open_clip."""
    script = (
        "import os, sys\n"
        "from pytest_diffperf.consistency import clip\n"
        "before = dict(os.environ)\n"
        "clip.resolve_weights(clip.TINY_MODEL, 'none')\n"
        "import huggingface_hub.constants as hub\n"
        "assert 'open_clip' in sys.modules and hub.HF_HUB_OFFLINE\n"
        "print(sorted(k for k in {*before, *os.environ} if before.get(k) != os.environ.get(k)))\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "TOKENIZERS_PARALLELISM")}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
