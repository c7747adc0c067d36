"""The real openai SDK against real reference servers: images, edits, videos, models.

Runs with whatever openai is installed (the ``test`` extra takes the newest); ``openai_pinned.sh``
and the tox env ``openai28`` run it again with openai 2.8.0, the release sglang 0.5.23 pins, and set
DIFFPERF_EXPECT_OPENAI so the run fails if another release was imported.
"""

from __future__ import annotations

import base64
import io
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from PIL import Image

if TYPE_CHECKING:
    from openai import OpenAI
    from openai.types import ImagesResponse

openai = pytest.importorskip("openai")

pytestmark = pytest.mark.server

INPUT_IMAGE = Path(__file__).resolve().parents[2] / "data" / "inputs" / "hills_128.png"
FAST = {"num_inference_steps": 2, "seed": 5}
VIDEO = {**FAST, "num_frames": 5}
VIDEO_SIZE: Any = "64x64"  # the SDK's VideoSize lists OpenAI's four sizes; SGLang's server takes any WxH


@pytest.fixture
def client() -> Iterator[Callable[[Any], OpenAI]]:
    """An SDK client of a server; closed after the test (an unclosed one leaks its sockets)."""
    made: list[OpenAI] = []

    def make(server) -> OpenAI:
        made.append(openai.OpenAI(api_key="sglang-anything", base_url=f"{server.url}/v1", max_retries=0, timeout=120))
        return made[-1]

    yield make
    for c in made:
        c.close()


def _b64_json(result: ImagesResponse) -> str:
    """The first image's base64 (the SDK types ``data`` and ``b64_json`` as optional)."""
    assert result.data, result
    b64 = result.data[0].b64_json
    assert b64 is not None, result
    return b64


@pytest.fixture(scope="module")
def edit_server(start_server):
    return start_server("tiny/flux-kontext-edit", "--warmup-steps", "1")


@pytest.fixture(scope="module")
def t2v_server(start_server):
    return start_server(
        "tiny/wan-t2v", "--warmup-steps", "1", "--warmup-num-frames", "1", "--warmup-resolutions", "64x64"
    )


@pytest.fixture(scope="module")
def i2v_server(start_server):
    return start_server(
        "tiny/wan-i2v", "--warmup-steps", "1", "--warmup-num-frames", "1", "--warmup-resolutions", "64x64"
    )


def test_reports_the_openai_version(record_property):
    record_property("openai_version", openai.__version__)
    print(f"openai {openai.__version__} from {openai.__file__}")
    expected = os.environ.get("DIFFPERF_EXPECT_OPENAI")
    if expected:
        assert openai.__version__ == expected


def test_images_generate(flux, client):
    result = client(flux).images.generate(
        model="tiny/flux-t2i", prompt="a red kite", size="64x64", response_format="b64_json", extra_body=FAST
    )
    data = base64.b64decode(_b64_json(result))
    with Image.open(io.BytesIO(data)) as img:
        assert (img.format, img.size) == ("JPEG", (64, 64))
    assert (result.model_extra or {}).get("id")  # SGLang's field besides OpenAI's
    png = client(flux).images.generate(
        model="tiny/flux-t2i", prompt="a red kite", size="64x64", response_format="b64_json", output_format="png",
        extra_body=FAST,
    )  # fmt: skip
    assert base64.b64decode(_b64_json(png))[:4] == b"\x89PNG"


def test_images_edit(edit_server, client):
    with INPUT_IMAGE.open("rb") as fh:
        result = client(edit_server).images.edit(
            model="tiny/flux-kontext-edit", image=fh, prompt="make it night", size="64x64", extra_body=FAST
        )
    with Image.open(io.BytesIO(base64.b64decode(_b64_json(result)))) as img:
        assert img.size == (64, 64)
    with INPUT_IMAGE.open("rb") as fh:  # image[] as SGLang's harness sends it
        listed = client(edit_server).images.edit(
            model="tiny/flux-kontext-edit", image=[fh], prompt="make it night", size="64x64", extra_body=FAST
        )
    assert _b64_json(listed) == _b64_json(result)


def test_videos_create_retrieve_download_and_poll(t2v_server, client):
    sdk = client(t2v_server)
    job = sdk.videos.create(model="tiny/wan-t2v", prompt="waves", size=VIDEO_SIZE, extra_body=VIDEO)
    assert job.status == "queued"
    done = sdk.videos.create_and_poll(model="tiny/wan-t2v", prompt="waves", size=VIDEO_SIZE, extra_body=VIDEO)
    assert done.status == "completed"
    assert done.progress == 100
    assert sdk.videos.retrieve(job.id).status == "completed"  # the first job ran before the second
    content = sdk.videos.download_content(job.id).read()
    assert content[4:8] == b"ftyp"
    assert job.id in {v.id for v in sdk.videos.list().data}


def test_image_to_video_upload(i2v_server, client):
    sdk = client(i2v_server)
    with INPUT_IMAGE.open("rb") as fh:
        done = sdk.videos.create_and_poll(
            model="tiny/wan-i2v",
            prompt="the sun sets",
            input_reference=fh,
            size=VIDEO_SIZE,
            extra_body=VIDEO,
        )
    assert done.status == "completed", done.error
    assert sdk.videos.download_content(done.id).read()[4:8] == b"ftyp"


def test_t2v_rejects_an_uploaded_reference(t2v_server, client):
    with INPUT_IMAGE.open("rb") as fh, pytest.raises(openai.BadRequestError) as err:
        client(t2v_server).videos.create(model="tiny/wan-t2v", prompt="x", input_reference=fh, extra_body=VIDEO)
    assert err.value.response.json() == {"detail": "input_reference is not supported for T2V models."}


def test_models_list_and_retrieve(flux, client):
    sdk = client(flux)
    assert [m.id for m in sdk.models.list().data] == ["tiny/flux-t2i"]
    assert sdk.models.retrieve("tiny/flux-t2i").id == "tiny/flux-t2i"
    with pytest.raises(openai.NotFoundError):
        sdk.models.retrieve("no-such-model")
