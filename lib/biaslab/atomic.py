"""Atomic file output: write to a temporary file in the target folder, then rename over the target.

An interrupted or failing stage therefore never leaves a half-written file; the previous version (if any)
stays intact until the new one is complete. Parent folders are created as needed. A process killed outright leaves
only its hidden temporary file, which the stage runner removes before the stage runs again
(:func:`remove_stale_temps`).

Infrastructure, not a stage dependency: how a file reaches the disk never changes its bytes (what is written is
decided by :mod:`biaslab.io`'s formats); the integration test's kill-and-rerun and byte-for-byte reruns check it.
"""

from __future__ import annotations

import contextlib
import glob
import os
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; on success it replaces ``path``, on error it is removed."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        if tmp_path.exists():  # mkstemp creates 0600; give the result the mode a plain open() would
            os.chmod(tmp_path, 0o666 & ~_umask())
        os.replace(tmp_path, target)
    except BaseException:
        tmp_path.unlink(missing_ok=True)
        raise


def remove_stale_temps(targets: Iterable[str | os.PathLike]) -> list[Path]:
    """Remove the temporary files an interrupted :func:`atomic_path` left behind — a process killed outright (SIGKILL,
    the OOM killer, a lost machine) runs no cleanup, so its ``.NAME.XXXX.tmp`` stays beside the file it was writing.
    ``targets``: a stage's outputs; beside a file target its own temporaries, inside a folder every one. The targets
    themselves are never touched (a killed write never replaced them). Returns what was removed."""
    removed = []
    for target in map(Path, targets):
        if target.is_dir():
            stale = target.rglob(".*.tmp")
        elif target.parent.is_dir():
            stale = target.parent.glob(f".{glob.escape(target.name)}.*.tmp")
        else:
            continue
        for tmp in sorted(stale):
            if tmp.is_file():
                tmp.unlink()
                removed.append(tmp)
    return removed


@contextlib.contextmanager
def atomic_open(path: str | os.PathLike, mode: str = "w", **kwargs: Any) -> Iterator[IO]:
    """``open`` for writing, atomically (text mode defaults to UTF-8)."""
    if "b" not in mode:
        kwargs.setdefault("encoding", "utf-8")
    with atomic_path(path) as tmp, open(tmp, mode, **kwargs) as fh:
        yield fh
        fh.flush()
        os.fsync(fh.fileno())
