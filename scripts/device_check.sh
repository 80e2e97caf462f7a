#!/usr/bin/env bash
# On a GPU machine with no network, from the folder scripts/device_bundle.sh built (copied there with the repository):
#
#     scripts/device_check.sh [BUNDLE]        (default BUNDLE: device_bundle)
#
# 1. installs the bundle's wheels into a temporary prefix (nothing goes into the machine's Python) and puts them, the
#    library and the bundle's fp16 MiniLM first on PYTHONPATH;
# 2. runs the CUDA tests (`pytest -m gpu`, tests/test_gpu.py);
# 3. times the same ragfair debiasing run (LoRA, 64 pairs, 4 steps) on the GPU and on the CPU;
# and writes GPU_JSON (default benchmarks/results/gpu.json): device, torch and CUDA versions, the tests' outcome,
# each part's seconds, peak GPU memory and the CPU / GPU time ratio of that run.
#
# With CUDA_VISIBLE_DEVICES= it runs on the CPU (the tests skip, no ratio), which is how CI keeps it from rotting.
# Not yet here: the medium profile's stages (configs/gpu.yaml) need the pipeline runner without DVC and papermill,
# which do not fit in the bundle (scripts/device_bundle.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
BUNDLE=${1:-device_bundle}
PY=${PYTHON:-python3}
GPU_JSON=${GPU_JSON:-benchmarks/results/gpu.json}
[ -d "$BUNDLE/wheels" ] && [ -d "$BUNDLE/site" ] || {
  echo "device_check: $BUNDLE is not a bundle; build it with scripts/device_bundle.sh" >&2; exit 2; }
BUNDLE=$(cd "$BUNDLE" && pwd)

prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
"$PY" -m pip install --quiet --disable-pip-version-check --no-index --no-deps --target "$prefix/site" \
  "$BUNDLE"/wheels/*.whl
export PYTHONPATH="$PWD/lib:$prefix/site:$BUNDLE/site${PYTHONPATH:+:$PYTHONPATH}"
export BIASLAB_CACHE_DIR="$prefix/cache" HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1

SECONDS=0
tests=0
"$PY" -m pytest -m gpu -q -p no:cacheprovider -o addopts="" --junitxml "$prefix/tests.xml" tests/test_gpu.py \
  || tests=$?
tests_s=$SECONDS

"$PY" - "$GPU_JSON" "$prefix" "$tests" "$tests_s" "$BUNDLE" <<'PY'
"""Time one debiasing run on each device and write the record."""
import json
import platform
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pandas as pd
import torch

from biaslab import config, models
from biaslab.io import write_json
from biaslab.ragfair import debias

out, prefix, status, tests_s, bundle = (Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]),
                                        Path(sys.argv[5]))
P = config.load_params()
T = P.ragfair.train
folder = models.preflight(["minilm"], P.models)["minilm"]
if not folder.resolve().is_relative_to(bundle):
    sys.exit(f"device_check: minilm resolved to {folder}, not to the bundle's fp16 copy in {bundle}")
pairs = pd.DataFrame([{"query": f"Who forgot meeting {i}?", "passage": f"Someone forgot meeting {i}.",
                       "biased_stereotyped": f"The old man forgot meeting {i}.",
                       "biased_non_stereotyped": f"The young woman forgot meeting {i}."} for i in range(64)])
cfg = debias.method_config(T, "lora")


def run(device: str) -> float:
    start = time.perf_counter()
    debias.train(folder, pairs, prefix / f"run-{device}", cfg, epochs=1, batch_size=16, learning_rate=T.learning_rate,
                 warmup_ratio=0.0, max_grad_norm=T.max_grad_norm, seed=0, device=device,
                 max_seq_length=T.max_seq_length, record={}, probe_batches=0)
    return time.perf_counter() - start


cuda = torch.cuda.is_available()
seconds = {}
if cuda:
    run("cuda")  # warm-up: CUDA context, kernels
    torch.cuda.reset_peak_memory_stats()
    seconds["train_gpu"] = run("cuda")
seconds["train_cpu"] = run("cpu")
suite = ET.parse(prefix / "tests.xml").getroot()
suite = suite if suite.tag == "testsuite" else suite.find("testsuite")
record = {
    "device": torch.cuda.get_device_name(0) if cuda else "cpu (no CUDA device)",
    "cpu": next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                 if line.startswith("model name")), platform.machine()), "python": platform.python_version(),
    "torch": torch.__version__, "cuda": torch.version.cuda, "bundle_model": str(folder),
    "gpu_tests": {k: int(suite.get(k, 0)) for k in ("tests", "failures", "errors", "skipped")} | {"exit": status},
    "seconds": {"gpu_tests": round(tests_s, 1), **{k: round(v, 2) for k, v in seconds.items()}},
    "peak_gpu_memory_gib": round(torch.cuda.max_memory_allocated() / 2**30, 3) if cuda else None,
    "train_run": "ragfair LoRA recipe, 64 pairs, batch 16, 4 steps, MiniLM in fp16 weights",
    "cpu_over_gpu_time": round(seconds["train_cpu"] / seconds["train_gpu"], 1) if cuda else None,
}
print(json.dumps(record, indent=1))
print(f"wrote {write_json(out, record)}")
PY
exit "$tests"
