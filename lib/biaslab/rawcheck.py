"""Raw data checked before a stage uses it: every ``data/raw`` file a stage reads must match the manifest.

``biaslab fetch`` checks each file's size and SHA-256 against ``biaslab/data/manifest.json`` when it puts it in
place, but a file cut, edited or replaced afterwards would otherwise be read as it is: a truncated IndiBias CSV of
100 well-formed rows makes a smaller reference corpus, silently. The runner therefore calls :func:`verify_stage`
before the kernel starts: the manifest's files under the stage's ``data/raw`` dependencies (a data set's folder or
one file) that are present are checked, and a mismatch stops the stage, naming the file, what was expected and
found, and the fix; nothing is written. A missing file is left to the data set's reader, which names the fetch step
the same way.

Hashing every file on every run would cost seconds (the MS MARCO and BBQ files are large), so a file whose size
and modification time are those recorded at its last successful check is not hashed again (the record,
``<cache>/raw_verified.json``, is keyed by the file's absolute path). Editing a file changes its mtime, so the check
sees it; a change that keeps size and mtime (``touch -r`` after an edit) is not seen, as with ``make`` or ``rsync``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .data import DataError
from .data.fetch import load_manifest, sha256_file

RECORD = "raw_verified.json"


class RawDataMismatch(DataError):
    """A raw data file differs from the manifest."""


def manifest_files(raw_dir: Path, manifest: dict[str, Any] | None = None) -> dict[Path, tuple[str, dict]]:
    """Every file of the manifest as ``raw_dir/<dataset>/<path>`` -> (dataset, entry)."""
    manifest = manifest or load_manifest()
    return {raw_dir / ds / e["path"]: (ds, e) for ds, spec in manifest.items() for e in spec["files"]}


def _load_record(path: Path) -> dict[str, list]:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def verify(paths: list[Path], raw_dir: Path, *, record: Path, manifest: dict[str, Any] | None = None) -> int:
    """Check the manifest's files at or under ``paths`` (those present) against their size and SHA-256; return
    how many were checked. Raises :class:`RawDataMismatch` naming every file that differs."""
    from .atomic import atomic_path

    files = manifest_files(raw_dir.resolve(), manifest)
    wanted = [p.resolve() for p in paths]
    chosen = {f: v for f, v in files.items() if any(f == w or w in f.parents for w in wanted)}
    seen = _load_record(record)
    problems, changed = [], False
    for file, (dataset, entry) in sorted(chosen.items()):
        try:
            st = file.stat()
        except FileNotFoundError:
            continue  # the reader names the fetch step
        key, stamp = str(file), [st.st_size, st.st_mtime_ns, entry["sha256"]]
        if seen.get(key) == stamp:
            continue
        if st.st_size != entry["size"]:
            found = f"{st.st_size} bytes, expected {entry['size']}"
        else:
            digest = sha256_file(file)
            found = None if digest == entry["sha256"] else f"SHA-256 {digest[:16]}…, expected {entry['sha256'][:16]}…"
        if found is None:
            seen[key], changed = stamp, True
        else:
            seen.pop(key, None)
            problems.append(f"{file}: {found}; fix: `biaslab fetch {dataset}` (restores the manifest's file)")
    if changed:
        record.parent.mkdir(parents=True, exist_ok=True)
        with atomic_path(record) as tmp:
            Path(tmp).write_text(json.dumps(seen, indent=0, sort_keys=True), encoding="utf-8")
    if problems:
        raise RawDataMismatch("raw data differs from the manifest (lib/biaslab/data/manifest.json), so the stage was "
                              "not run and nothing was written:\n  " + "\n  ".join(problems))
    return len(chosen)


def verify_stage(stage: str, root: Path, raw_dir: Path) -> int:
    """:func:`verify` for the dependencies of ``stage`` (dvc.yaml) inside ``raw_dir`` (params.yaml's
    ``data.raw_dir``, resolved by the runner)."""
    from . import stages
    from .paths import cache_dir

    raw_dir = raw_dir.resolve()
    deps = [(root / d).resolve() for d in stages.deps(stage, root)]
    inside = [d for d in deps if d == raw_dir or raw_dir in d.parents]
    return verify(inside, raw_dir, record=cache_dir() / RECORD) if inside else 0
