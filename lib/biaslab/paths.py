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
