"""What the API routes take from a request: its server, its images, the file paths it names, its fields.

Bad input is SGLang's 400: ``HTTPException`` with the message as ``detail``.
"""

from __future__ import annotations

import base64
import binascii
import io
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import numpy.typing as npt
from fastapi import Depends, HTTPException, Request
from PIL import Image, UnidentifiedImageError

from .specs import GenParams
from .worker import RefServer


def current_server(request: Request) -> RefServer:
    """The ``RefServer`` of the app serving ``request`` (``create_app`` puts it on the app state)."""
    server: RefServer = request.app.state.server
    return server


ServerDep = Annotated[RefServer, Depends(current_server)]


def bad(message: str, status: int = 400) -> HTTPException:
    return HTTPException(status_code=status, detail=message)


def params_for(server: RefServer, fields: dict[str, Any]) -> GenParams:
    """A request's fields as checked ``GenParams`` for the served model; 400 with the reason otherwise."""
    try:
        return server.spec.params(num_gpus=server.config.num_gpus, **fields)
    except (TypeError, ValueError) as exc:
        raise bad(str(exc)) from None


def decode_image(data: bytes, source: str) -> npt.NDArray[np.uint8]:
    try:
        with Image.open(io.BytesIO(data)) as img:
            return np.asarray(img.convert("RGB"))
    except (UnidentifiedImageError, OSError, ValueError, Image.DecompressionBombError) as exc:
        raise bad(f"Failed to process image source: {source}: {exc}") from None


def request_path(value: str, field: str, files_dir: str | None) -> str:
    """A file path a request names (``field``), refused (400) unless it lies inside ``files_dir``: a difference
    from SGLang, which reads and writes any path a request names."""
    if files_dir is None:
        raise bad(
            f"{field}: file paths in requests are refused; start the reference server with "
            "--request-files-dir DIR to accept paths inside DIR"
        )
    resolved = Path(value).resolve()
    if not resolved.is_relative_to(Path(files_dir).resolve()):
        raise bad(f"{field}: {value} is outside --request-files-dir {files_dir}")
    return str(resolved)


def image_from_reference(value: str, files_dir: str | None) -> npt.NDArray[np.uint8]:
    """A JSON ``input_reference``/``reference_url``: a ``data:`` URL or a file path inside ``files_dir``."""
    if value.startswith("data:"):
        try:
            return decode_image(base64.b64decode(value.split(",", 1)[1], validate=True), "data URL")
        except (IndexError, binascii.Error):
            raise bad("Failed to process image source: data URL is not base64") from None
    if "://" in value:
        raise bad(f"Failed to process image source: {value}: the reference server does not download URLs")
    path = request_path(value, "input_reference", files_dir)
    try:
        with open(path, "rb") as fh:
            return decode_image(fh.read(), value)
    except OSError as exc:
        raise bad(f"Failed to process image source: {value}: {exc.strerror}") from None
