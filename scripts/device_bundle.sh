#!/usr/bin/env bash
# What a GPU machine with no network needs beyond its own image, built where the package registry is reachable:
#
#     scripts/device_bundle.sh [OUT]          (default OUT: device_bundle, git-ignored; at most 60 MiB, checked)
#
#   OUT/wheels/        the packages the library and its GPU tests import that the GPU image lacks, at the versions of
#                      requirements-lock.txt, built for DEVICE_PYTHON (default 3.12, the image's Python; CI builds for
#                      its own to run scripts/device_check.sh on CPU)
#   OUT/site.tar.xz    all-MiniLM-L6-v2 (the registry's `minilm`) in fp16 safetensors, laid out as the package that
#                      ships it, so the registry finds it on PYTHONPATH with no change to params.yaml; its config asks
#                      for float32, so it computes as the CPU default does (xz: 45 MB of fp16 weights travel as 41)
#   OUT/params.yaml    params.yaml with PROFILE merged (default configs/gpu.yaml), or the whole file PARAMS, plus
#                      what this machine cannot carry: intersect's zero-shot LLM baseline and cscl's CLM
#                      augmentations off
#   OUT/stages.json    dvc.yaml resolved by DVC with those parameters (biaslab.stages.freeze): the GPU image has no DVC
#   OUT/run.json       the stages to run there, in pipeline order, and those left out with the reason: fetch (the
#                      data travel), the RAG reader (SmolLM2 does not travel) and every stage after it
#   OUT/data.tar.xz    the files of data/raw those stages read, from BIASLAB_DATA_MIRROR
#   OUT/manifest.json  every file with its size, and the fp16 copy's agreement with the fp32 original
#
# The GPU image (scripts/gpu_image_packages.txt: torch, transformers, sentence-transformers, peft, pandas, scikit-learn,
# scipy, statsmodels, seaborn, pyarrow, pyyaml, pytest, ...) lacks pydantic, datasets, ruamel.yaml and ir-measures (with
# pytrec_eval, through which it computes MRR and nDCG), which the library imports. DVC, papermill, jupytext, FAISS and
# fairlearn (the tests' reference only) do not travel: with MiniLM they would not fit (stages run with `biaslab run
# --plain`; without FAISS, biaslab.index searches with torch.topk on the GPU). Nor does SmolLM2 (270 MB in fp16):
# params.yaml here turns off what runs it besides the RAG reader (intersect's zero-shot baseline, cscl's CLM
# augmentations in the sensitivity study). CI runs this bundle's check in an environment of the image's packages
# alone (scripts/gpu_image_env.py), so an import of anything else fails there as it would on the GPU machine. The
# repository travels beside the bundle, and the two together must stay under the 64 MiB a device call takes: checked.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-device_bundle}
PY=${PYTHON:-.venv/bin/python}
DEVICE_PYTHON=${DEVICE_PYTHON:-3.12}
LIMIT=$((60 * 1024 * 1024))
TRAVEL=$((64 * 1024 * 1024))
PROFILE=${PROFILE:-configs/gpu.yaml}
PARAMS=${PARAMS:-}
[ -n "${BIASLAB_DATA_MIRROR:-}" ] || { echo "device_bundle: set BIASLAB_DATA_MIRROR to the data sets' folder" >&2; exit 2; }
PACKAGES=(pydantic pydantic_core annotated-types typing-inspection datasets dill multiprocess ruamel.yaml ir_measures
          pytrec_eval-terrier)

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

"$PY" - "$tmp" "$PROFILE" "$PARAMS" <<'PY'
"""The fp16 copy of minilm laid out as its package, the parameters, stages and data of the run, and the manifest."""
import atexit
import json
import os
import shutil
import sys
import tarfile
import tempfile
from pathlib import Path

import numpy as np
from safetensors.numpy import load_file, save_file

from biaslab import config, models, rawcheck, stages
from biaslab.numpy_encoder import NumpyBert
from biaslab.overrides import apply_overrides

out, profile, params = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
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
with tarfile.open(out / "site.tar.xz", "w:xz", preset=6) as tar:
    tar.add(out / "site", arcname="site")
shutil.rmtree(out / "site")

# the run: parameters, the stages as DVC resolves them with those, and what they read
plan = Path(tempfile.mkdtemp(prefix="device_bundle_plan."))  # outside the repository: DVC ignores its .*.tmp folders
atexit.register(shutil.rmtree, plan, ignore_errors=True)  # removed however this script ends
shutil.copy("dvc.yaml", plan / "dvc.yaml")
shutil.copy(params or "params.yaml", plan / "params.yaml")
if not params:
    apply_overrides(profile, plan / "params.yaml")
(plan / "device.yaml").write_text(  # SmolLM2 does not travel: its zero-shot baseline and CLM augmentations stay off
    "intersect: {baselines: {zero_shot_backend: none}}\ncscl: {sensitivity: {augmentations: []}}\n")
apply_overrides(plan / "device.yaml", plan / "params.yaml")
stages.freeze(out / "stages.json", plan)
order, needs = stages.pipeline_order(plan), stages.upstream(plan)
skipped = {"fetch": "the data sets travel in data.tar.xz"}
for k in order:
    if k.startswith("ragcontrol_rag@"):
        skipped[k] = "the RAG reader (SmolLM2) does not travel: run it on the CPU from the GPU run's outputs"
    elif needs[k] & set(skipped) - {"fetch"}:
        skipped[k] = f"needs {', '.join(sorted(needs[k] & set(skipped) - {'fetch'}))}"
run = [k for k in order if k not in skipped]
(out / "run.json").write_text(json.dumps({"run": run, "skipped": skipped}, indent=1) + "\n")
raw = Path(os.environ["BIASLAB_DATA_MIRROR"])
reads = sorted({d[len("data/raw/"):] for k in run for d in stages.deps(k, plan) if d.startswith("data/raw/")})
wanted = sorted(p for p in rawcheck.manifest_files(raw)
                if any(p == raw / r or p.is_relative_to(raw / r) for r in reads))
if missing := [str(p) for p in wanted if not p.is_file()]:
    sys.exit(f"device_bundle: the data mirror lacks {missing[:5]}")
with tarfile.open(out / "data.tar.xz", "w:xz", preset=6) as tar:
    for p in wanted:
        tar.add(p, arcname=str(p.relative_to(raw)))
shutil.copy(plan / "params.yaml", out / "params.yaml")
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
tree=$(git ls-files -z --cached --others --exclude-standard | "$PY" -c \
  'import os, sys; print(sum(os.path.getsize(p) for p in sys.stdin.read().split("\0") if os.path.isfile(p)))')
if [ $((size + tree)) -gt "$TRAVEL" ]; then
  echo "device_bundle: the bundle ($size bytes) and the repository ($tree bytes) are over the 64 MiB a device call" \
       "takes" >&2
  exit 1
fi
rm -rf "$OUT"
mv "$tmp" "$OUT"
trap - EXIT
echo "device_bundle: $OUT, $((size / 1024 / 1024)) MiB ($size bytes) for Python $DEVICE_PYTHON;" \
     "with the repository $(((size + tree) / 1024 / 1024)) MiB of the 64 that travel"
