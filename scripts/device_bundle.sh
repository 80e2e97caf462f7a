#!/usr/bin/env bash
# What a GPU machine with no network needs beyond its own image, built where the package registry is reachable:
#
#     scripts/device_bundle.sh [OUT]          (default OUT: device_bundle, git-ignored; at most 60 MiB, checked)
#
#   OUT/wheels/   the packages the library and its GPU tests import that the GPU image lacks, at the versions of
#                 requirements-lock.txt, built for DEVICE_PYTHON (default 3.12, the image's Python; CI builds for its
#                 own to run scripts/device_check.sh on CPU)
#   OUT/site/     all-MiniLM-L6-v2 (the registry's `minilm`) in fp16 safetensors, laid out as the package that ships
#                 it, so the registry finds it on PYTHONPATH with no change to params.yaml; its config asks for
#                 float32, so it computes as the CPU default does
#   OUT/manifest.json   every file with its size, and the fp16 copy's agreement with the fp32 original
#
# The GPU image (torch, transformers, sentence-transformers, peft, pandas, scikit-learn, scipy, statsmodels,
# seaborn, pyarrow, pyyaml, pytest) lacks pydantic, datasets and ruamel.yaml, which the library imports. DVC,
# papermill, jupytext, FAISS, ir-measures and fairlearn do not travel: with MiniLM's 45 MB they would not fit (without
# FAISS, biaslab.index searches with torch.topk on the GPU).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-device_bundle}
PY=${PYTHON:-.venv/bin/python}
DEVICE_PYTHON=${DEVICE_PYTHON:-3.12}
LIMIT=$((60 * 1024 * 1024))
PACKAGES=(pydantic pydantic_core annotated-types typing-inspection datasets dill multiprocess ruamel.yaml)

pins=()
for name in "${PACKAGES[@]}"; do
  pin=$(grep -i -E "^${name//[-_.]/[-_.]}==" requirements-lock.txt) || {
    echo "device_bundle: $name is not in requirements-lock.txt" >&2; exit 2; }
  pins+=("$pin")
done

tmp="$(dirname "$OUT")/.$(basename "$OUT").tmp"
rm -rf "$tmp"
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/wheels" "$tmp/site"
abi="cp${DEVICE_PYTHON/./}"
"$PY" -m pip download --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
  --python-version "$DEVICE_PYTHON" --implementation cp --abi "$abi" --abi abi3 --abi none \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
  --platform any -d "$tmp/wheels" "${pins[@]}"

"$PY" - "$tmp" <<'PY'
"""The fp16 copy of minilm, laid out as its package, and the manifest."""
import json
import shutil
import sys
from pathlib import Path

import numpy as np
from safetensors.numpy import load_file, save_file

from biaslab import config, models
from biaslab.numpy_encoder import NumpyBert

out = Path(sys.argv[1])
spec = models.REGISTRY["minilm"]
source = models.preflight(["minilm"], config.load_params(sections=["models"]).models)["minilm"]
package = out / "site" / spec.module
target = package / spec.subdir
shutil.copytree(source, target, ignore=shutil.ignore_patterns("model.safetensors", "README.md", ".gitattributes",
                                                              "data_config.json"))
(package / "__init__.py").write_text('"""all-MiniLM-L6-v2 in fp16, for biaslab\'s model registry (scripts/'
                                     'device_bundle.sh)."""\n')
model_config = json.loads((target / "config.json").read_text())
model_config["dtype"] = "float32"  # stored in fp16, computed in fp32 as on the CPU: transformers casts on load
(target / "config.json").write_text(json.dumps(model_config, indent=2) + "\n")
weights = load_file(source / "model.safetensors")
save_file({k: v.astype(np.float16) if v.dtype == np.float32 else v for k, v in weights.items()},
          target / "model.safetensors", metadata={"format": "pt"})
texts = ["The nurse said she would be late.", "The engineer fixed it himself.", "A quiet morning in the park."]
length = json.loads((source / "sentence_bert_config.json").read_text())["max_seq_length"]
full, half = (NumpyBert(folder, length).encode(texts) for folder in (source, target))
cosine = float((full * half).sum(axis=1).min())
if cosine < 0.9999:
    sys.exit(f"device_bundle: the fp16 copy's vectors are at cosine {cosine:.6f} to the fp32 ones (< 0.9999)")
files = {str(p.relative_to(out)): p.stat().st_size for p in sorted(out.rglob("*")) if p.is_file()}
(out / "manifest.json").write_text(json.dumps({"bytes": sum(files.values()), "fp16_min_cosine": round(cosine, 7),
                                               "files": files}, indent=1) + "\n")
PY

size=$(du -sb "$tmp" | cut -f1)
if [ "$size" -gt "$LIMIT" ]; then
  echo "device_bundle: $size bytes, over the 60 MiB that can travel; see $tmp/manifest.json" >&2
  trap - EXIT
  exit 1
fi
rm -rf "$OUT"
mv "$tmp" "$OUT"
trap - EXIT
echo "device_bundle: $OUT, $((size / 1024 / 1024)) MiB ($size bytes) for Python $DEVICE_PYTHON"
