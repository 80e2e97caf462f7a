"""Raw data checked against the manifest before a stage's kernel starts (biaslab.rawcheck, called by the runner)."""

from __future__ import annotations

import hashlib
import os
import shutil

import pytest

from biaslab import rawcheck, run
from biaslab.data import fetch

from conftest import REPO


def _manifest(files: dict[str, bytes]) -> dict:
    return {"toy": {"files": [{"path": name, "size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
                              for name, data in files.items()]}}


def test_a_file_is_hashed_once_then_trusted_on_size_and_mtime_and_a_change_is_named(tmp_path, monkeypatch):
    raw = tmp_path / "raw"
    (raw / "toy").mkdir(parents=True)
    good = {"a.csv": b"x,y\n1,2\n", "b.csv": b"z\n3\n"}
    for name, data in good.items():
        (raw / "toy" / name).write_bytes(data)
    manifest, record = _manifest(good), tmp_path / "cache" / "raw_verified.json"
    assert rawcheck.verify([raw / "toy"], raw, record=record, manifest=manifest) == 2
    assert rawcheck.verify([raw / "toy" / "b.csv"], raw, record=record, manifest=manifest) == 1  # one file
    assert rawcheck.verify([raw / "other"], raw, record=record, manifest=manifest) == 0

    def no_hashing(path):
        raise AssertionError(f"{path} hashed again although its size and mtime are unchanged")

    monkeypatch.setattr(rawcheck, "sha256_file", no_hashing)
    assert rawcheck.verify([raw / "toy"], raw, record=record, manifest=manifest) == 2
    monkeypatch.setattr(rawcheck, "sha256_file", fetch.sha256_file)

    (raw / "toy" / "a.csv").write_bytes(b"x,y\n9,2\n")  # same size, new content (and a new mtime)
    st = (raw / "toy" / "a.csv").stat()
    os.utime(raw / "toy" / "a.csv", ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    with pytest.raises(rawcheck.RawDataMismatch, match=r"toy/a.csv: SHA-256 \w+…, expected \w+…; fix: `biaslab fetch "
                                                       r"toy`"):
        rawcheck.verify([raw / "toy"], raw, record=record, manifest=manifest)
    (raw / "toy" / "b.csv").write_bytes(b"z\n")  # cut short
    with pytest.raises(rawcheck.RawDataMismatch, match=r"(?s)a.csv.*b.csv: 2 bytes, expected 4"):  # every file named
        rawcheck.verify([raw / "toy"], raw, record=record, manifest=manifest)
    (raw / "toy" / "b.csv").unlink()  # missing: left to the reader, which names the fetch step
    (raw / "toy" / "a.csv").write_bytes(good["a.csv"])
    assert rawcheck.verify([raw / "toy"], raw, record=record, manifest=manifest) == 2


def test_a_truncated_raw_file_stops_the_stage_before_anything_is_written(project, capsys):
    """The silent-corruption case: IndiBias cut to its first rows (well-formed CSV) used to give a smaller reference
    corpus without a warning; now the runner refuses before the kernel starts and names the file and the fix."""
    (project / "notebooks").mkdir()
    shutil.copytree(REPO / "notebooks" / "intersect", project / "notebooks" / "intersect")
    entry = fetch.load_manifest()["indibias"]["files"][0]
    target = project / "data" / "raw" / "indibias" / entry["path"]
    target.parent.mkdir(parents=True)
    target.write_text("sentence,label\n" + "a well-formed row,gender\n" * 100)
    assert run.main(["intersect_reference@indic"]) == 2
    err = capsys.readouterr().err
    assert f"{target}: " in err and f"expected {entry['size']}" in err and "biaslab fetch indibias" in err
    assert "nothing was written" in err
    assert not (project / "data" / "processed").exists() and not (project / "reports").exists()
