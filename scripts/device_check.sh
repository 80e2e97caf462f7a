#!/usr/bin/env bash
# On a GPU machine with no network, from the folder scripts/device_bundle.sh built (copied there with the repository):
#
#     scripts/device_check.sh [BUNDLE]        (default BUNDLE: device_bundle)
#
# 1. installs the bundle's wheels and unpacks its fp16 MiniLM into a temporary prefix (nothing goes into the machine's
#    Python) and puts them and the library first on PYTHONPATH;
# 2. runs the CUDA tests (`pytest -m gpu`, tests/test_gpu.py);
# 3. times the same ragfair debiasing run (LoRA, 64 pairs, 4 steps) on the GPU and on the CPU;
# 4. runs the bundle's stages (its run.json: the profile's pipeline without DVC, `biaslab run --plain`) in a scratch
#    copy of the repository with the bundle's parameters and data, each after those it needs, JOBS side by side
#    (default: half the cores, at most 8, each with its share of the CPU threads; 1: one after another), those
#    one paper's before the next paper's, and within a paper those more stages wait on first, so that a run the
#    budget stops leaves whole papers; none starts once STAGE_BUDGET_S seconds (default 420; 0: no limit) have
#    passed; STAGES (space-separated prefixes, e.g. "ragfair_ cscl_") runs a part of them; each stage's log is in
#    the scratch copy, and a failed one's tail is printed;
# and writes GPU_JSON (default benchmarks/results/gpu.json): device, torch and CUDA versions, the versions of the
# packages the encoders run through, the tests' outcome, the CPU / GPU time ratio of that run, and each stage's
# seconds, start and end, peak GPU and resident memory and outcome; and each paper's claims.csv / competence.csv at
# that scale under GPU_RESULTS/<paper>/ (default reports/gpu). Both are rewritten as each stage ends, so a run
# stopped from outside (a job's time limit) leaves what it measured; GPU_JSON's "complete" says whether it finished.
# A profile too large for one call runs in parts, a STAGES list a call: where GPU_JSON holds an earlier call's record
# of the same bundle parameters, the stages this call leaves out keep their earlier records ("calls" lists each
# call's STAGES and wall time; "all_stages_run" says when every stage of the plan has run). TESTS=0 skips steps 2 and
# 3 on such a later call (about 40 s), keeping the earlier call's outcome of them.
#
# With CUDA_VISIBLE_DEVICES= it runs on the CPU (the tests skip, no ratio): CI does, on a bundle of tiny parameters,
# so that it cannot rot. Exit status: the tests' if they failed, else 1 if a stage failed.
set -euo pipefail
cd "$(dirname "$0")/.."
BUNDLE=${1:-device_bundle}
PY=${PYTHON:-python3}
GPU_JSON=${GPU_JSON:-benchmarks/results/gpu.json}
GPU_RESULTS=${GPU_RESULTS:-reports/gpu}
[ -d "$BUNDLE/wheels" ] && [ -f "$BUNDLE/site.tar.xz" ] || {
  echo "device_check: $BUNDLE is not a bundle; build it with scripts/device_bundle.sh" >&2; exit 2; }
BUNDLE=$(cd "$BUNDLE" && pwd)

prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
"$PY" -m pip install --quiet --disable-pip-version-check --no-index --no-deps --target "$prefix/site" \
  "$BUNDLE"/wheels/*.whl
"$PY" -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2], filter="data")' \
  "$BUNDLE/site.tar.xz" "$prefix/model"
export PYTHONPATH="$PWD/lib:$prefix/site:$prefix/model/site${PYTHONPATH:+:$PYTHONPATH}"
export BIASLAB_CACHE_DIR="$prefix/cache" HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 PYTHONUNBUFFERED=1

SECONDS=0
tests=0
if [ "${TESTS:-1}" != 0 ]; then
  "$PY" -m pytest -m gpu -q -p no:cacheprovider -o addopts="" --junitxml "$prefix/tests.xml" tests/test_gpu.py \
    || tests=$?
fi
tests_s=$SECONDS

status=0
"$PY" - "$GPU_JSON" "$prefix" "$tests" "$tests_s" "$BUNDLE" "$GPU_RESULTS" <<'PY' || status=$?
"""Time one debiasing run on each device, run the bundle's stages, and write the record."""
import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import tarfile
import time
import xml.etree.ElementTree as ET
from importlib import metadata
from pathlib import Path

import torch

from biaslab import config, models, stages
from biaslab.io import write_json
from biaslab.ragfair import debias

sys.path.insert(0, "tests")
from fixtures import ragfair_pairs  # noqa: E402  (the tests' toy pairs)

out, prefix, status, tests_s, bundle, results = (Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]),
                                                 float(sys.argv[4]), Path(sys.argv[5]), Path(sys.argv[6]))
P = config.load_params()
T = P.ragfair.train
folder = models.preflight(["minilm"], P.models)["minilm"]
if not folder.resolve().is_relative_to(prefix.resolve()):
    sys.exit(f"device_check: minilm resolved to {folder}, not to the bundle's fp16 copy")
pairs = ragfair_pairs(64)
cfg = debias.method_config(T, "lora")


def run(device: str) -> float:
    start = time.perf_counter()
    debias.train(folder, pairs, prefix / f"run-{device}", cfg, epochs=1, batch_size=16, learning_rate=T.learning_rate,
                 warmup_ratio=0.0, max_grad_norm=T.max_grad_norm, seed=0, device=device,
                 max_seq_length=T.max_seq_length, record={}, probe_batches=0)
    return time.perf_counter() - start


cuda = torch.cuda.is_available()
checks = os.environ.get("TESTS", "1") != "0"  # TESTS=0: a later call of a run in parts skips the tests and timing
seconds = {}
if cuda and checks:
    run("cuda")  # warm-up: CUDA context, kernels
    torch.cuda.reset_peak_memory_stats()
    seconds["train_gpu"] = run("cuda")
if checks:
    seconds["train_cpu"] = run("cpu")


jobs = max(1, int(os.environ.get("JOBS") or min(8, (os.cpu_count() or 2) // 2)))


def paper_of(stage: str) -> str:
    """The paper a stage belongs to (its name's first part: ragfair_train@lora -> ragfair; cards -> cards)."""
    return stage.split("_")[0]


def run_stages(write) -> list[dict]:
    """The bundle's stages in a scratch copy of the repository, ``jobs`` at a time, each after those it needs,
    within the budget; ``write(records)`` after each one ends (with the claims of the papers that have them)."""
    plan = json.loads((bundle / "run.json").read_text())
    work = prefix / "repo"
    for part in ("lib", "notebooks", "dvc.yaml", "pyproject.toml", "reports/paper_values"):
        if Path(part).is_dir():
            shutil.copytree(part, work / part, ignore=shutil.ignore_patterns("__pycache__"))
        elif Path(part).is_file():
            shutil.copy(part, work / part)
    shutil.copy(bundle / "params.yaml", work / "params.yaml")
    raw = work / config.load_params(work / "params.yaml", ["data"]).data.raw_dir
    with tarfile.open(bundle / "data.tar.xz") as tar:
        tar.extractall(raw, filter="data")
    threads = str(max(1, (os.cpu_count() or 1) // jobs))  # torch's CPU threads per stage: the cores shared out
    env = {**os.environ, "BIASLAB_ROOT": str(work), "BIASLAB_STAGES": str(bundle / "stages.json"),
           "OMP_NUM_THREADS": threads, "MKL_NUM_THREADS": threads}
    os.environ.update({k: env[k] for k in ("BIASLAB_ROOT", "BIASLAB_STAGES")})
    prefixes = os.environ.get("STAGES", "").split()
    order = [s for s in plan["run"] if not prefixes or s.startswith(tuple(prefixes))]
    (work / "logs").mkdir()
    print(f"device_check: {len(order)} stages, {jobs} at a time ({threads} CPU threads each)", flush=True)

    def run_one(stage: str) -> dict:
        if stage not in order:  # left out by STAGES: not built, so the stages that need it do not run either
            return {"status": "not run: not in STAGES"}
        log = work / "logs" / f"{stage.replace('@', '_')}.log"
        timing = log.with_suffix(".timing.jsonl")  # the stage's own line (biaslab.run.record_timings)
        with log.open("w") as f:
            code = subprocess.run([sys.executable, "-m", "biaslab.run", "--plain", stage], cwd=work,
                                  env=env | {"BIASLAB_TIMINGS": str(timing)}, stdout=f,
                                  stderr=subprocess.STDOUT).returncode
        record = {"status": "ok" if code == 0 else f"failed (exit {code})"}
        if code == 0:
            record |= {k: json.loads(timing.read_text()).get(k) for k in ("wall_s", "peak_gpu_mb", "peak_rss_mb")}
        print(f"device_check: {stage}: {record['status']} {record.get('wall_s', '')}", flush=True)
        if code != 0:
            print("".join(log.read_text().splitlines(keepends=True)[-40:]), flush=True)
        return record

    def progress(records: list[dict]) -> None:
        for paper in sorted({paper_of(r["stage"]) for r in records}):
            for name in ("claims.csv", "competence.csv"):
                if (work / "reports" / paper / "results" / name).is_file():
                    (results / paper).mkdir(parents=True, exist_ok=True)
                    shutil.copy(work / "reports" / paper / "results" / name, results / paper / name)
        write(records)

    budget = float(os.environ.get("STAGE_BUDGET_S", 420))
    return stages.run_concurrently(plan["run"], stages.upstream(work), run_one, jobs=jobs, budget_s=budget,
                                   on_record=progress, group=paper_of)


params_sha = hashlib.sha256((bundle / "params.yaml").read_bytes()).hexdigest()[:16]
earlier = json.loads(out.read_text()) if os.environ.get("STAGES") and out.is_file() else {}
if earlier and earlier.get("params_sha") != params_sha:
    print(f"device_check: {out} is another bundle's record (other parameters): not merged, overwritten", flush=True)
    earlier = {}
record = {
    "device": torch.cuda.get_device_name(0) if cuda else "cpu (no CUDA device)",
    "cpu": next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                 if line.startswith("model name")), platform.machine()), "cpu_cores": os.cpu_count(),
    "python": platform.python_version(), "torch": torch.__version__, "cuda": torch.version.cuda,
    "bundle_model": str(folder),
    "packages": {name: metadata.version(name) for name in ("transformers", "sentence-transformers", "peft",
                                                           "huggingface-hub", "tokenizers", "numpy")},
}
if checks:
    suite = ET.parse(prefix / "tests.xml").getroot()
    suite = suite if suite.tag == "testsuite" else suite.find("testsuite")
    record |= {
        "gpu_tests": {k: int(suite.get(k, 0)) for k in ("tests", "failures", "errors", "skipped")} | {"exit": status},
        "seconds": {"gpu_tests": round(tests_s, 1), **{k: round(v, 2) for k, v in seconds.items()}},
        "peak_gpu_memory_gib": round(torch.cuda.max_memory_allocated() / 2**30, 3) if cuda else None,
        "train_run": "ragfair LoRA recipe, 64 pairs, batch 16, 4 steps, MiniLM in fp16 weights",
        "cpu_over_gpu_time": round(seconds["train_cpu"] / seconds["train_gpu"], 1) if cuda else None}
else:  # the earlier call's outcome of them, if any
    record |= {k: earlier.get(k) for k in ("gpu_tests", "seconds", "peak_gpu_memory_gib", "train_run",
                                           "cpu_over_gpu_time")}
this_call = {"stages": os.environ.get("STAGES") or "all", "device": record["device"],
             "gpu_tests": record["gpu_tests"] if checks else "not run (TESTS=0)"}
record["params_sha"] = params_sha


def write(ran: list[dict], complete: bool = False) -> None:
    """The record with the stages so far: rewritten after each stage, so a run stopped from outside leaves them;
    a stage this call left out (STAGES) keeps an earlier call's record of the same parameters."""
    merged = stages.carry_over(ran, earlier.get("stages", []))
    this_call.update({"stages_wall_s": max((r.get("end_s") or 0 for r in ran), default=0),
                      "stage_seconds": round(sum(r.get("wall_s") or 0 for r in ran), 1)})
    record.update({"complete": complete, "stages": merged, "stage_jobs": jobs,
                   "stage_seconds": round(sum(r.get("wall_s") or 0 for r in merged), 1),
                   "stages_wall_s": this_call["stages_wall_s"], "calls": [*earlier.get("calls", []), this_call],
                   "all_stages_run": bool(merged) and all(not r["status"].startswith("not run") for r in merged),
                   "not_run_here": json.loads((bundle / "run.json").read_text())["skipped"] if ran else {}})
    write_json(out, record)


ran = run_stages(write) if (bundle / "run.json").is_file() else []
write(ran, complete=True)
print(json.dumps(record, indent=1))
print(f"wrote {out}")
sys.exit(1 if any(r["status"].startswith("failed") for r in ran) else 0)
PY
[ "$tests" -ne 0 ] && exit "$tests"
exit "$status"
