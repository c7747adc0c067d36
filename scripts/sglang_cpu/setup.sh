#!/usr/bin/env bash
# One command: a venv that runs SGLang's real diffusion server (`sglang serve`, 0.5.23) on this CPU, with this
# checkout installed in it, and the tiny seeded model folders SGLang loads.
#
#   bash scripts/sglang_cpu/setup.sh VENV        # then: export DIFFPERF_MODELS=VENV/diffperf-models
#
# It installs sglang without its dependencies (its CUDA kernels are not needed on CPU) and then what its CPU
# path imports (requirements.txt beside this file, SGLang's pins); the plugin with the same pins as constraints;
# then writes the model folders with `diffperf-refserver export` (the reference server's modules and seeds).
# Run again, it installs nothing new and rewrites the models only when missing. docs/sglang.md has the details.
set -euo pipefail
if [ $# -lt 1 ]; then
  echo "usage: bash scripts/sglang_cpu/setup.sh VENV" >&2
  exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
checkout=$(cd "$here/../.." && pwd)
venv=$1
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 PIP_DISABLE_PIP_VERSION_CHECK=1
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
pip=("$venv/bin/python" -m pip install -q)
"${pip[@]}" -r "$here/requirements.txt"
"${pip[@]}" --no-deps "sglang==0.5.23"
"${pip[@]}" -c "$here/requirements.txt" -e "$checkout[all,test]"
"$venv/bin/diffperf-refserver" export --all "$venv/diffperf-models"
echo "ready: $venv (sglang $("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("sglang"))'))"
echo "models: $venv/diffperf-models  (export DIFFPERF_MODELS=$venv/diffperf-models)"
