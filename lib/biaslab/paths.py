"""Where things live: the repository root, data folders and the on-disk caches."""

from __future__ import annotations

import os
from pathlib import Path

_MARKERS = ("dvc.yaml", "params.yaml")


def repo_root(start: str | os.PathLike | None = None) -> Path:
    """The project root: the nearest folder at or above ``start`` (default: cwd) holding dvc.yaml and
    params.yaml. ``BIASLAB_ROOT`` overrides the search (useful when a notebook is opened elsewhere)."""
    env = os.environ.get("BIASLAB_ROOT")
    if env:
        return Path(env).resolve()
    here = Path(start or os.getcwd()).resolve()
    for folder in (here, *here.parents):
        if all((folder / m).is_file() for m in _MARKERS):
            return folder
    raise FileNotFoundError(
        f"no biaslab project (a folder with {' and '.join(_MARKERS)}) at or above {here}; "
        "run from inside the repository or set BIASLAB_ROOT to its path"
    )


def cache_dir() -> Path:
    """Root of the content-addressed caches (embeddings, LLM responses, converted model weights).

    ``BIASLAB_CACHE_DIR`` overrides the default ``<repo>/.cache/biaslab`` (or ``~/.cache/biaslab`` outside
    a project). Caches never change results: every entry is keyed by what produced it."""
    env = os.environ.get("BIASLAB_CACHE_DIR")
    if env:
        path = Path(env)
    else:
        try:
            path = repo_root() / ".cache" / "biaslab"
        except FileNotFoundError:
            path = Path.home() / ".cache" / "biaslab"
    path.mkdir(parents=True, exist_ok=True)
    return path


def resolve(path: str | os.PathLike, root: Path | None = None) -> Path:
    """A path from params.yaml: absolute as given, relative to the repository root otherwise."""
    p = Path(path)
    return p if p.is_absolute() else (root or repo_root()) / p


# Committed under reports/ but written by no stage: the report stage's inputs, which a copy keeps
REPORT_INPUTS = ("reports/paper_values/", "reports/gpu/")


def copy_project(src: Path, dst: Path, *, skip_reports: bool = True) -> Path:
    """Copy the files git would see (tracked + untracked, not ignored) of the project at ``src`` into ``dst``,
    leaving out committed results (``reports/``, ``dvc.lock``) so the copy recomputes them — but keeping the
    report stage's inputs under ``reports/`` (:data:`REPORT_INPUTS`: the papers' artefact lists, the GPU run's
    claims). Used by the integration test and the benchmarks to run the real pipeline in a temporary copy."""
    import shutil
    import subprocess

    files = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=src,
                           capture_output=True, text=True, check=True).stdout.split("\n")
    for rel in filter(None, files):
        if skip_reports and ((rel.startswith("reports/") and not rel.startswith(REPORT_INPUTS)) or rel == "dvc.lock"):
            continue
        if not (src / rel).is_file():
            continue
        (dst / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src / rel, dst / rel)
    subprocess.run(["git", "init", "-q"], cwd=dst, check=True)
    return dst
