#!/usr/bin/env bash
# Run the tests that need SGLang's own openai client again with openai 2.8.0 (the release sglang 0.5.23
# pins), installed into a separate folder that goes first on PYTHONPATH: the OpenAI SDK tests against the
# reference server, and the request-fidelity tests (SGLang's get_generate_fn), which skip under openai 3.x.
# Both fail if another openai release is imported.
set -euo pipefail
cd "$(dirname "$0")/.."
target="${OPENAI_PINNED_DIR:-.openai-2.8.0}"
python3 -m pip install -q --no-deps --target "$target" openai==2.8.0 "httpx>=0.27,<1" "httpcore>=1,<2" h11 distro
DIFFPERF_EXPECT_OPENAI=2.8.0 PYTHONPATH="$PWD/$target:$PWD${PYTHONPATH:+:$PYTHONPATH}" \
    python3 -m pytest tests/refserver/test_openai_sdk.py tests/sglang/test_request_fidelity.py -p no:cacheprovider "$@"
