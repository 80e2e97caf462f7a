"""Put the public data sets under ``data/raw/<dataset>/``, each file checked by size and SHA-256.

Sources, in order:
1. a local mirror folder named by the environment variable ``BIASLAB_DATA_MIRROR`` (a copy of the data sets
   laid out as ``<mirror>/<dataset>/<file>``);
2. the official location (a pinned commit of the data set's public repository), when ``allow_online``.

A file already present with the right hash is kept. Every file is written atomically and verified before it
replaces anything; a wrong size or hash, a missing file or an unreachable source stops with a message naming
the data set, the file, where it officially lives and how to provide it. After copying, each data set is
read once with its reader so a schema problem surfaces here, not in a later stage.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import urllib.request
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

from ..atomic import atomic_path
from ._schema import DataError

MIRROR_ENV = "BIASLAB_DATA_MIRROR"


class FetchError(DataError):
    """A data file could not be obtained or failed its check."""


DOWNLOAD_TIMEOUT = 60.0  # seconds per file download (not a research knob)

def load_manifest() -> dict[str, Any]:
    return json.loads(resources.files("biaslab.data").joinpath("manifest.json").read_text(encoding="utf-8"))


def dataset_rows(counts: dict[str, dict[str, int]]) -> list[dict[str, str]]:
    """``reports/data/datasets.csv``: per data set fetched (``counts``: what :func:`fetch` returns), its origin and
    licence from the manifest and the records its reader found."""
    manifest = load_manifest()
    return [{"dataset": ds, "origin": manifest[ds]["origin"], "license": manifest[ds]["license"],
             "records": "; ".join(f"{k}: {v}" for k, v in c.items())} for ds, c in counts.items()]


def validators() -> dict[str, Callable[[Path], dict[str, int]]]:
    """Data set -> function that reads every file of it from a raw folder (schema check)."""
    from . import (
        bbq,
        biasbios,
        grep_biasir,
        indibias,
        jigsaw,
        kim2025,
        msmarco,
        rekabsaz,
        sbic,
        seat,
        trec_dl,
        trec_fair,
        twinviews,
        wikitext,
    )

    return {
        "seat": seat.validate, "indibias": indibias.validate, "sbic": sbic.validate, "bbq": bbq.validate,
        "twinviews_13k": twinviews.validate, "debiasing_rag_kim2025": kim2025.validate,
        "genderbias_ir_rekabsaz2020": rekabsaz.validate_2020,
        "msmarco_fair_queries_rekabsaz2021": rekabsaz.validate_2021,
        "grep_biasir": grep_biasir.validate, "trec_fair_2022": trec_fair.validate,
        "wikitext2_valid_test": wikitext.validate, "trecdl_passage_bm25_top100_text": trec_dl.validate,
        "jigsaw_identity_term_bias_testsets": jigsaw.validate, "bias_in_bios_samples": biasbios.validate,
        "msmarco_train_triples_splade_toy": msmarco.validate,
    }


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _check(path: Path, entry: dict[str, Any]) -> str | None:
    """None when ``path`` matches the manifest entry, else what is wrong."""
    size = path.stat().st_size
    if size != entry["size"]:
        return f"size {size} bytes, expected {entry['size']}"
    digest = sha256_file(path)
    if digest != entry["sha256"]:
        return f"SHA-256 {digest[:12]}…, expected {entry['sha256'][:12]}…"
    return None


def _where(dataset: str, spec: dict[str, Any]) -> str:
    return f"official source {spec.get('origin', '?')} (licence: {spec.get('license', '?')})"


def _from_mirror(src: Path, dst: Path, entry: dict, dataset: str) -> None:
    problem = _check(src, entry)
    if problem:
        raise FetchError(f"{dataset}: mirror file {src} does not match the manifest ({problem}); replace it with "
                         "the official file or unset BIASLAB_DATA_MIRROR to download it")
    with atomic_path(dst) as tmp:
        shutil.copyfile(src, tmp)


def _download(url: str, dst: Path, entry: dict, dataset: str, timeout: float) -> None:
    with atomic_path(dst) as tmp:
        try:
            with urllib.request.urlopen(url, timeout=timeout) as resp, open(tmp, "wb") as fh:
                shutil.copyfileobj(resp, fh, 1 << 20)
        except OSError as err:
            raise FetchError(f"{dataset}: cannot download {url} ({err}); work offline by setting "
                             f"{MIRROR_ENV} to a folder holding {dataset}/{entry['path']}") from None
        problem = _check(tmp, entry)
        if problem:
            raise FetchError(f"{dataset}: {url} gave a file that does not match the manifest ({problem})")


def fetch_dataset(dataset: str, raw_dir: Path, *, mirror: Path | None = None, allow_online: bool,
                  manifest: dict[str, Any] | None = None, timeout: float) -> list[dict[str, Any]]:
    """Fetch one data set; returns one row per file (path, bytes, sha256, source)."""
    manifest = manifest or load_manifest()
    if dataset not in manifest:
        raise FetchError(f"unknown data set {dataset!r}; known: {', '.join(manifest)}")
    spec = manifest[dataset]
    rows = []
    for entry in spec["files"]:
        dst = raw_dir / dataset / entry["path"]
        if dst.is_file() and _check(dst, entry) is None:
            source = "present"
        elif mirror is not None:
            src = mirror / dataset / entry["path"]
            if not src.is_file():
                raise FetchError(f"{dataset}: {entry['path']} is not in the mirror {mirror} (expected {src}); "
                                 f"copy it there from the {_where(dataset, spec)}")
            _from_mirror(src, dst, entry, dataset)
            source = "mirror"
        elif not allow_online:
            raise FetchError(f"{dataset}: {entry['path']} is missing, no mirror is set and downloads are off "
                             f"(data.allow_online: false); set {MIRROR_ENV} to a local copy of the data sets")
        elif entry.get("url") is None:
            raise FetchError(f"{dataset}: {entry['path']} exists only as a conversion of the {_where(dataset, spec)} "
                             f"(no byte-identical file online); set {MIRROR_ENV} to a folder that holds it")
        else:
            _download(entry["url"], dst, entry, dataset, timeout)
            source = "download"
        rows.append({"dataset": dataset, "file": entry["path"], "bytes": entry["size"],
                     "sha256": entry["sha256"][:12], "source": source})
    return rows


def mirror_from_env() -> Path | None:
    value = os.environ.get(MIRROR_ENV, "").strip()
    if not value:
        return None
    path = Path(value).expanduser()
    if not path.is_dir():
        raise FetchError(f"{MIRROR_ENV}={value!r} is not a folder; point it at a local copy of the data sets "
                         "(one sub-folder per data set) or unset it to download")
    return path.resolve()


def fetch(datasets: list[str], raw_dir: str | os.PathLike, *, mirror: Path | None = None,
          allow_online: bool, validate: bool = True, manifest: dict[str, Any] | None = None,
          progress: bool = True) -> tuple[list[dict[str, Any]], dict[str, dict[str, int]]]:
    """Fetch and (optionally) schema-check several data sets. Returns (file rows, records per data set)."""
    from ..runtime import progress as bar

    raw_dir = Path(raw_dir)
    mirror = mirror if mirror is not None else mirror_from_env()
    rows: list[dict[str, Any]] = []
    counts: dict[str, dict[str, int]] = {}
    checks = validators()
    for dataset in (bar(datasets, desc="fetch") if progress else datasets):
        rows += fetch_dataset(dataset, raw_dir, mirror=mirror, allow_online=allow_online, manifest=manifest,
                              timeout=DOWNLOAD_TIMEOUT)
        if validate:
            counts[dataset] = checks[dataset](raw_dir)
    return rows, counts
