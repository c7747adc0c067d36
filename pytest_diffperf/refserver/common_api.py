"""The model, server-info and LoRA routes (SGLang's ``common_api``), and the outputs no built-in model makes."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from importlib import metadata
from typing import Any

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from .. import protocol
from .api_models import ModelCard, ModelInfo, ModelList, ModelsInfo, ServerInfo
from .request_inputs import ServerDep, bad
from .worker import RefServer

LORA_FAILURES = {
    "/v1/set_lora": "Failed to set LoRA adapter",
    "/v1/merge_lora_weights": "Failed to merge LoRA weights",
    "/v1/unmerge_lora_weights": "Failed to unmerge LoRA weights",
}
NO_LORA = "the reference server has no LoRA support"

router = APIRouter()


def _model_card(server: RefServer) -> ModelCard:
    spec = server.spec
    return ModelCard(
        id=server.model_path,
        created=server.started,
        root=server.model_path,
        num_gpus=server.config.num_gpus,
        task_type=spec.task_type.value,
        supported_task_types=[spec.task_type.value],
        pipeline_name=spec.pipeline_name,
        pipeline_class=spec.pipeline_class,
    )


def _version() -> str:
    try:
        return metadata.version("pytest-diffperf")
    except metadata.PackageNotFoundError:
        return "0"


@router.get(protocol.MODELS_PATH)
async def list_models(server: ServerDep) -> ModelList:
    return ModelList(data=[_model_card(server)])


@router.get(protocol.MODELS_PATH + "/{model:path}", response_model=None)
async def retrieve_model(model: str, server: ServerDep) -> JSONResponse | ModelCard:
    if model != server.model_path:
        error = {
            "message": f"The model '{model}' does not exist",
            "type": "invalid_request_error",
            "param": "model",
            "code": "model_not_found",
        }
        return JSONResponse({"error": error}, status_code=404)
    return _model_card(server)


@router.get("/models")
async def models_info(server: ServerDep) -> ModelsInfo:
    spec = server.spec
    return ModelsInfo(
        model_path=server.model_path,
        num_gpus=server.config.num_gpus,
        task_type=spec.task_type.value,
        supported_task_types=[spec.task_type.value],
        pipeline_name=spec.pipeline_name,
        pipeline_class=spec.pipeline_class,
    )


@router.get("/server_info")
async def server_info(server: ServerDep) -> ServerInfo:
    name = server.model_path
    return ServerInfo(model_path=name, served_model_name=name, version=_version())


@router.get("/model_info")
async def model_info(server: ServerDep) -> ModelInfo:
    spec, task = server.spec, server.spec.task_type
    return ModelInfo(
        model_path=server.model_path,
        architectures=[spec.pipeline_class],
        has_image_understanding=task.accepts_image,
        task_type=task.value,
        supported_task_types=[task.value],
        output_types=[task.output_type],
        is_image_gen=not task.is_video,
    )


@router.get("/v1/model_info")
async def v1_model_info(server: ServerDep) -> dict[str, str]:
    return {"model_path": server.model_path}


# ---- LoRA (unsupported: answered as SGLang answers a scheduler failure) -----------------------
def _lora_refusal(failure: str) -> Callable[[], Awaitable[None]]:
    async def lora() -> None:
        raise bad(f"{failure}: {NO_LORA}", 500)

    return lora


for path, failure in LORA_FAILURES.items():
    router.post(path)(_lora_refusal(failure))


@router.get("/v1/list_loras")
async def list_loras() -> dict[str, Any]:  # SGLang's adapters by name: never any here
    return {}


# ---- outputs the reference models cannot make -----------------------------------------------
@router.post("/v1/meshes")
async def meshes(server: ServerDep) -> None:
    spec = server.spec
    raise bad(f"{spec.name} serves {spec.task_type.value}; mesh generation (I2M) is not supported")
