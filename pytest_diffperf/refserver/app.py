"""FastAPI app: SGLang's diffusion HTTP API (health, models, images, videos) over one staged pipeline.

Errors are SGLang's: ``{"detail": ...}`` from ``HTTPException`` (400, 404, 500) and FastAPI's 422 for
a body that fails validation. Requests other than the health and info routes wait until the
server warmup is done, as SGLang's ``wait_for_server_warmup`` middleware does.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response

from .. import protocol
from . import common_api, image_api, video_api
from .worker import RefServer, ServerConfig

WARMUP_BYPASS_PATHS = (
    "/metrics",
    protocol.LIVENESS_PATH,
    protocol.HEALTH_PATH,
    "/health_generate",
    "/model_info",
    "/server_info",
)


def create_app(config: ServerConfig) -> FastAPI:
    """The app serving ``config``'s model: loading starts with the app, readiness gates requests.

    The readiness routes (liveness, health) are here; the rest come from the ``common_api``,
    ``image_api`` and ``video_api`` routers, which find the ``RefServer`` on ``app.state.server``.
    """
    ready = asyncio.Event()
    loop_box: list[asyncio.AbstractEventLoop] = []

    def on_ready() -> None:
        loop_box[0].call_soon_threadsafe(ready.set)

    server = RefServer(config, on_ready)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        loop_box.append(asyncio.get_running_loop())
        server.worker.submit(server.load)
        yield

    app = FastAPI(title="pytest-diffperf reference diffusion server", lifespan=lifespan)
    app.state.server = server

    @app.middleware("http")
    async def wait_for_server_warmup(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        if not ready.is_set() and request.url.path not in WARMUP_BYPASS_PATHS:
            await ready.wait()
        return await call_next(request)

    @app.get(protocol.LIVENESS_PATH)
    async def liveness() -> dict[str, str]:
        return {"status": "ok"}

    @app.get(protocol.HEALTH_PATH)
    @app.get("/health_generate")
    async def health() -> Response:
        if not ready.is_set():
            return Response(status_code=503)
        return JSONResponse({"status": "ok"})

    for api in (common_api, image_api, video_api):
        app.include_router(api.router)
    return app
