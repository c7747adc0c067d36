"""The model side of the server: one worker thread that loads, warms up and runs every generation.

All model work runs FIFO on a single thread, like one GPU. The HTTP layer stays responsive
meanwhile. Torch is imported on the worker thread, not at import time.
"""

from __future__ import annotations

import concurrent.futures
import logging
import os
import queue
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import numpy as np

from ..protocol import LOAD_MARKER
from .api_models import VideoJob
from .faults import Faults
from .media import encode_mp4
from .memory import MemoryTracker, SnapshotMode
from .perflog import PerfLog
from .specs import GenParams, ModelSpec

if TYPE_CHECKING:
    from .pipeline import RunResult, StagedPipeline

log = logging.getLogger("refserver")
T = TypeVar("T")

WarmupMode = Literal["off", "request", "server"]
PROGRESS_CAP = 99  # an unfinished job never shows 100 (SGLang's video_progress cap)


@dataclass
class ServerConfig:
    spec: ModelSpec
    faults: Faults = field(default_factory=Faults)
    warmup_mode: WarmupMode = "server"
    warmup_params: list[dict[str, Any]] = field(default_factory=lambda: [{}])  # one warmup run per entry
    default_seed: int = 42
    num_threads: int = 1
    num_gpus: int = 1
    memory_snapshots: SnapshotMode = "device"
    output_path: str | None = None
    request_files_dir: str | None = None  # file paths in requests (perf_dump_path, input_reference) only in here
    model_path: str | None = None  # --model-path as given (the routes report it, as SGLang's); None: the model's id


def warmup_request(spec: ModelSpec, overrides: dict[str, Any], *, seed: int, num_gpus: int) -> GenParams:
    """A warmup generation: the model defaults, light ones (2 steps, 9 frames), then ``overrides``."""
    fields: dict[str, Any] = {"num_inference_steps": 2, "seed": seed}
    if spec.is_video:
        fields["num_frames"] = 9
    if spec.task_type.accepts_image:
        fields["image"] = np.full((spec.height, spec.width, 3), 128, dtype=np.uint8)
    fields.update(overrides)
    return spec.params(num_gpus=num_gpus, **fields)


class Worker:
    """A single daemon thread running submitted callables one at a time, in order."""

    def __init__(self) -> None:
        self._jobs: queue.Queue[tuple[Callable[[], Any], concurrent.futures.Future[Any]]] = queue.Queue()
        threading.Thread(target=self._loop, name="refserver-worker", daemon=True).start()

    def submit(self, fn: Callable[[], T]) -> concurrent.futures.Future[T]:
        future: concurrent.futures.Future[T] = concurrent.futures.Future()
        self._jobs.put((fn, future))
        return future

    def _loop(self) -> None:
        while True:
            fn, future = self._jobs.get()
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(fn())
            except BaseException as exc:  # noqa: BLE001 - handed to the waiting request
                future.set_exception(exc)


class RefServer:
    """Server state: the pipeline (once loaded), readiness, video jobs, saved images, perf log."""

    def __init__(self, config: ServerConfig, on_ready: Callable[[], None]):
        self.config = config
        self.spec = config.spec
        self.model_path = config.model_path or config.spec.name  # what the routes report as the model
        self.worker = Worker()
        self.memory = MemoryTracker(config.memory_snapshots)
        self.perflog = PerfLog()
        self.pipeline: StagedPipeline | None = None  # set by load() on the worker thread
        self.state = "loading"  # loading -> warming_up -> ready
        self.warmed_up = config.warmup_mode != "request"
        self.videos: dict[str, VideoJob] = {}
        self.images: dict[str, str] = {}  # image request id -> its first file under --output-path
        self.started = int(time.time())
        self._on_ready = on_ready

    # ---- startup ----------------------------------------------------------------------------
    def load(self) -> None:
        try:
            self._load()
        except BaseException:  # noqa: BLE001 - a server that cannot load must not look alive
            traceback.print_exc()
            print(f"[refserver] error: failed to load {self.spec.name}; exiting", flush=True)
            os._exit(1)

    def _load(self) -> None:
        faults = self.config.faults
        if faults.fail_startup:
            print("[refserver] error: injected startup failure (--inject-fail-startup)", flush=True)
            os._exit(1)
        if faults.load_delay_ms:
            time.sleep(faults.load_delay_ms / 1000)
        import torch

        torch.set_num_threads(self.config.num_threads)
        from .pipeline import StagedPipeline

        self.pipeline = StagedPipeline(self.spec, faults, self.memory)
        # one write, so no other thread's output lands mid-line
        print(f"{LOAD_MARKER}{time.monotonic_ns()}\n", end="", flush=True)
        if self.config.warmup_mode == "server":
            self.state = "warming_up"
            t0 = time.perf_counter()
            for overrides in self.config.warmup_params:
                params = warmup_request(
                    self.spec, overrides, seed=self.config.default_seed, num_gpus=self.config.num_gpus
                )
                self.pipeline.run(params, warmup=True)
            log.info("warmup done in %.0f ms", (time.perf_counter() - t0) * 1000)
        # ATen picks its kernels (ATEN_CPU_CAPABILITY, else the CPU's best) at its first operator: named here, as
        # outputs compared with ground truth recorded on another CPU may differ by them
        kernels = torch.backends.cpu.get_cpu_capability()
        print(f"[refserver] ready: {self.spec.name} (torch CPU kernels: {kernels})", flush=True)
        self.state = "ready"
        self._on_ready()

    # ---- generation (worker thread) ---------------------------------------------------------
    def generate(
        self,
        request_id: str,
        params: GenParams,
        perf_dump_path: str | None = None,
        on_step: Callable[[int, int], None] | None = None,
    ) -> RunResult:
        """Run one request (after a request-mode warmup clone if due), log its perf record and dump."""
        assert self.pipeline is not None, "generation before load"
        if not self.warmed_up:
            self.pipeline.run(params, warmup=True)
            self.warmed_up = True
        result = self.pipeline.run(params, on_step=on_step)
        log.info("request %s: %.1f ms (%d steps)", request_id, result.total_ms, len(result.steps))
        record = self.perflog.write(
            request_id,
            result.stages,
            result.steps,
            result.total_ms,
            self.memory.snapshots(),
            dump_requested=perf_dump_path is not None,
        )
        if perf_dump_path is not None and record is not None:
            self.perflog.dump(perf_dump_path, record, self.spec.name)
        return result

    def run_video(self, job: VideoJob) -> None:
        job.status = "in_progress"

        def on_step(done: int, total: int) -> None:
            job.progress = max(job.progress, min(PROGRESS_CAP, int(100 * done / total)))

        try:
            result = self.generate(job.id, job.params, job.perf_dump_path, on_step)
            job.content = encode_mp4(result.frames[0], job.params.fps, job.compression)
            if self.config.output_path is not None:
                job.file_path = self.save_output(f"{job.id}.mp4", job.content)
        except Exception as exc:
            log.exception("video job %s failed", job.id)
            job.status, job.error = "failed", {"message": str(exc)}
            return
        job.inference_time_s = result.total_ms / 1000
        job.progress, job.completed_at, job.status = 100, int(time.time()), "completed"

    def save_output(self, name: str, data: bytes) -> str:
        """Write one output under ``--output-path``; returns its absolute path."""
        assert self.config.output_path is not None
        directory = os.path.abspath(self.config.output_path)
        os.makedirs(directory, exist_ok=True)
        path = os.path.join(directory, name)
        with open(path, "wb") as fh:
            fh.write(data)
        return path
