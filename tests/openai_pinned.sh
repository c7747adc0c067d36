#!/usr/bin/env bash
# Run the tests that need SGLang's own openai client again with the openai releases SGLang pins (its wheels'
# Requires-Dist: openai==2.8.0 in 0.5.23, openai==2.6.1 in 0.5.6-0.5.22), each installed into a separate
# folder that goes first on PYTHONPATH. With 2.8.0: the OpenAI SDK tests against the reference server, the
# request-fidelity tests (SGLang's get_generate_fn) and `diffperf verify-sglang` on 0.5.23; with 2.6.1:
# verify-sglang on 0.5.12 and 0.5.17. Each fails if another openai release is imported.
set -euo pipefail
cd "$(dirname "$0")/.."
run_pinned() {
    local pin="$1"
    shift
    local target="${OPENAI_PINNED_DIR:-.openai}-$pin"
    python3 -m pip install -q --no-deps --target "$target" "openai==$pin" "httpx>=0.27,<1" "httpcore>=1,<2" h11 distro
    DIFFPERF_EXPECT_OPENAI="$pin" PYTHONPATH="$PWD/$target:$PWD${PYTHONPATH:+:$PYTHONPATH}" \
        python3 -m pytest -p no:cacheprovider "$@"
}
run_pinned 2.8.0 tests/refserver/test_openai_sdk.py tests/sglang/test_request_fidelity.py tests/sglang/test_verify_sglang.py "$@"
run_pinned 2.6.1 tests/sglang/test_verify_sglang.py "$@"
