"""How each SGLang release judges its cases: ONE table, release range -> rule, each row read from that release.

Every row names where its releases say so (file:line of the first release with the new rule, and
of the last one before it), read in the wheels on PyPI (0.5.6 to 0.5.23). A case list is converted
and judged by the rows of its own release (``sglang.release.identify``), or of the release
``--diffperf-sglang-semantics=RELEASE`` names.
"""

from __future__ import annotations

from dataclasses import dataclass

from packaging.version import Version


@dataclass(frozen=True)
class Row:
    """From ``since`` on (inclusive) the rule is ``new``; before it ``old``. ``where`` cites both sides."""

    name: str
    since: str
    old: str
    new: str
    where: str
    not_applied: str = ""  # why the plugin keeps the new rule for older releases too (empty: it applies the row)
    until: str = ""  # the first release without the new rule again (empty: every later one has it)

    def applies(self, release: Version) -> bool:
        """Whether ``release`` has the new rule."""
        return release >= Version(self.since) and (not self.until or release < Version(self.until))


TABLE: tuple[Row, ...] = (
    Row(
        "step_allowances",
        "0.5.13",
        "the first denoise step is allowed rel 0.4 (pad 20 ms), a video's other steps pad 20 ms",
        "the first denoise step is allowed rel 4.0 (pad 80 ms), a video's other steps pad 160 ms, a decoding stage "
        "pad 450 ms",
        "test_server_utils.py: 0.5.12 _validate_denoise_steps `tolerance = 0.4 if idx == 0`; 0.5.13:63-66 "
        "FIRST_DENOISE_STEP_TOLERANCE, VIDEO_DENOISE_STEP_MIN_ABS_TOLERANCE_MS, DECODING_STAGE_MIN_ABS_TOLERANCE_MS",
    ),
    Row(
        "decoding_allowance",
        "0.5.12",
        "a decoding stage is allowed as any other stage (non_denoise_stage, pad 120 ms)",
        "a stage named *DecodingStage is allowed rel at least 0.9, pad 250 ms (450 ms from 0.5.13)",
        "test_server_utils.py _validate_stages: 0.5.11 no DecodingStage branch; 0.5.12 `if stage.endswith("
        '"DecodingStage")`',
    ),
    Row(
        "perf_check_off",
        "0.5.21",
        "run_perf_check false judges nothing (every check, the baseline lookup too, under `if case.run_perf_check:`)",
        "run_perf_check false still judges e2e and load ('disabling stage checks must not disable the e2e guard')",
        "test_server_common.py: 0.5.20:418 `if case.run_perf_check:`; 0.5.21:443-445 validate_e2e, validate_load",
    ),
    Row(
        "missing_scenario",
        "0.5.21",
        "a case without a baseline scenario fails only when run_perf_check is true",
        "a case without a baseline scenario fails whatever run_perf_check says",
        "test_server_common.py: 0.5.20:418-426; 0.5.21:437-441",
    ),
    Row(
        "e2e_scope",
        "0.5.21",
        "the e2e (and, from 0.5.20, memory) validation runs for perf-checked cases only",
        "validate_e2e runs for every case (validate_load exists from 0.5.21)",
        "test_server_common.py: 0.5.20:418-470; 0.5.21:444 (validate_load: test_server_utils.py, 0.5.21 first)",
    ),
    Row(
        "per_request_judging",
        "0.5.20",
        "of perf_repeat_requests measured requests only the last is judged (0.5.19: the loop keeps the last record)",
        "each of perf_repeat_requests measured requests is judged on its own: any one over a limit fails the case",
        "test_server_common.py: 0.5.19:1565-1601 `for _ in range(...)` then one _validate_and_record; "
        "0.5.20:1576-1653 `for request_index in ...` _validate_and_record per request",
    ),
    Row(
        "e2e_load_baseline_required",
        "0.5.21",
        "a scenario without expected_load_ms is judged without a load check; an expected_e2e_ms of 0 is not guarded",
        "validate_e2e and validate_load fail a scenario whose expected_e2e_ms or expected_load_ms is missing or not "
        "positive",
        "test_server_utils.py PerformanceValidator: absent in 0.5.20; 0.5.21:765-767 'E2E baseline missing or "
        "invalid', 775-785 'Load baseline missing or invalid'",
    ),
    Row(
        "vram_baseline_required",
        "0.5.19",
        "a scenario without load/runtime_peak_vram_mb is judged without them",
        "on CUDA a perf-checked scenario without load_peak_vram_mb or runtime_peak_vram_mb fails ('is missing a "
        "load/runtime peak VRAM baseline')",
        "test_server_common.py _validate_and_record: no VRAM check in 0.5.18; 0.5.19:452-462",
    ),
    Row(
        "text_url_image_to_video_extras",
        "0.5.21",
        "generate_text_url_image_to_video sends reference_url, fps, num_frames only (sampling_params.extras dropped)",
        "generate_text_url_image_to_video sends fps, num_frames, reference_url and sampling_params.extras",
        "test_server_utils.py generate_text_url_image_to_video: 0.5.20 extra_body={reference_url, fps, "
        "num_frames}; 0.5.21 {fps, num_frames, **extra_body}",
    ),
    Row(
        "teacache_extra",
        "0.5.10",
        "sampling_params.enable_teacache sends enable_teacache: true in every request (0.5.8-0.5.9)",
        "no enable_teacache field (extras carry what the request adds)",
        "test_server_utils.py 0.5.8:848-849 `if sampling_params.enable_teacache`; testcase_configs.py 0.5.10",
    ),
    Row(
        "t2v_num_frames",
        "0.5.10",
        "generate_video sends no num_frames (the server makes fps * seconds frames)",
        "generate_video sends sampling_params.num_frames",
        "test_server_utils.py generate_video: 0.5.9 extra_body has enable_teacache only; 0.5.10 num_frames",
    ),
    Row(
        "cfg_parallel_flag",
        "0.5.10",
        "the fixture passes no --enable-cfg-parallel (cfg_parallel is not read)",
        "server_args.cfg_parallel adds --enable-cfg-parallel",
        "test_server_common.py diffusion_server: absent in 0.5.9; 0.5.10 first",
    ),
    Row(
        "ulysses_from_gpus",
        "0.5.7",
        "the fixture always passes --ulysses-degree <num_gpus> (0.5.6 has no ulysses_degree field)",
        "server_args.ulysses_degree, when set, adds --ulysses-degree",
        "test_server_common.py diffusion_server: 0.5.6:54-56; 0.5.7:73-74",
    ),
    Row(
        "access_log_exclude",
        "0.5.18",
        "ServerManager starts sglang serve without --uvicorn-access-log-exclude-prefixes",
        "ServerManager appends --uvicorn-access-log-exclude-prefixes /health",
        "test_server_utils.py ServerManager.start: absent in 0.5.17; 0.5.18 first",
    ),
    Row(
        "strict_ports",
        "0.5.10",
        "the fixture starts the server without --strict-ports",
        "the fixture adds --strict-ports after the parallelism and offload flags",
        "test_server_common.py diffusion_server: absent in 0.5.9; 0.5.10 first",
        "the plugin always passes --strict-ports: concurrent servers get their own scheduler and master ports",
    ),
    Row(
        "model_type_flag",
        "0.5.11",
        "the fixture starts the server without --model-type diffusion",
        "the fixture starts its flags with --model-type diffusion",
        "test_server_common.py diffusion_server: absent in 0.5.10; 0.5.11 first",
        "the plugin always passes --model-type diffusion (how its launcher asks sglang serve for the diffusion server)",
    ),
    Row(
        "warmup_flag",
        "0.5.10",
        "server_args.enable_warmup adds --enable-warmup (0.5.8)",
        "server_args.enable_warmup (default true, until 0.5.12) adds --warmup",
        "test_server_common.py diffusion_server: 0.5.8:89-90 --enable-warmup; 0.5.10:102-103 --warmup",
    ),
    Row(
        "warmup_always",
        "0.5.9",
        "server_args.enable_warmup decides the warmup flag",
        "the fixture always adds --warmup (0.5.9 has no enable_warmup field)",
        "test_server_common.py diffusion_server: 0.5.9:90-91 `# default warmup`; 0.5.10:102 enable_warmup again",
        until="0.5.10",
    ),
    Row(
        "warmup_requests",
        "0.5.9",
        "the fixture sends server_args.warmup_text/warmup_edit (0.5.6-0.5.7) or warmup (0.5.8) warmup requests "
        "(WarmupRunner: the case's model, prompt and size) before the measured one",
        "no client-side warmup requests (perf_warmup_requests from 0.5.21)",
        "test_server_common.py: 0.5.6:70-90, 0.5.8:113-147 WarmupRunner; testcase_configs.py 0.5.9 has no warmup",
    ),
    Row(
        "quality_pins",
        "0.5.22",
        "no quality pin: requests and the server's warmup use the server's default quality",
        "__post_init__ pins quality (exact) on consistency-checked cases, in the request and in "
        "--warmup-sampling-params (pin_consistency_quality=False turns it off)",
        "testcase_configs.py DiffusionTestCase: 0.5.21 has no quality pin; 0.5.22 pin_consistency_quality",
    ),
    Row(
        "rocm_ring_skip",
        "0.5.7",
        "no platform skip in the fixture (0.5.6)",
        "on ROCm the fixture skips cases with ring_degree > 1 (ring attention needs Flash Attention)",
        "test_server_common.py diffusion_server: 0.5.7:54-59, 0.5.23:148-156 `current_platform.is_hip()`",
    ),
    Row(
        "amd_video_timeout",
        "0.5.7",
        "a video job is waited for 1200 s on every platform",
        "a video job is waited for 2400 s on AMD (ROCm), 1200 s elsewhere",
        "test_server_utils.py _create_and_download_video: 0.5.6:508 1200; 0.5.7:760-764 2400 on is_hip()",
    ),
)
ROWS = {row.name: row for row in TABLE}


@dataclass(frozen=True)
class Semantics:
    """The rules of one release (``release``; ``how`` says whether detected or given)."""

    release: Version
    how: str

    def has(self, name: str) -> bool:
        """Whether this release has row ``name``'s new rule."""
        return ROWS[name].applies(self.release)

    def describe(self) -> dict[str, str]:
        """Each row's rule for this release (for the results file and the header)."""
        return {row.name: row.new if row.applies(self.release) else row.old for row in TABLE}


LATEST = Semantics(Version("0.5.23"), "default")  # the newest release the table was read from


def newer_than_known(release: Version) -> str:
    """What to say of a release newer than the newest whose rules the table holds ('' for a known one)."""
    if Version(release.base_version) <= LATEST.release:
        return ""
    return f"newer than {LATEST.release}, the newest release pytest-diffperf's rules were read from: its rules applied"
