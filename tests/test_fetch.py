"""fetch: mirror copy with hash checks, skip when present, clear errors, and download from a loopback server."""

import hashlib
import http.server
import threading
from pathlib import Path

import pytest

from biaslab.data.fetch import FetchError, dataset_rows, fetch, fetch_dataset, load_manifest

import fixtures


def manifest_for(raw: Path, dataset: str, base_url: str | None = None) -> dict:
    files = []
    for f in sorted((raw / dataset).rglob("*")):
        if f.is_file():
            rel = f.relative_to(raw / dataset).as_posix()
            files.append({"path": rel, "size": f.stat().st_size, "sha256": hashlib.sha256(f.read_bytes()).hexdigest(),
                          "url": f"{base_url}/{dataset}/{rel}" if base_url else None})
    return {dataset: {"origin": "test/repo@0", "license": "test", "files": files}}


def test_manifest_covers_every_configured_dataset():
    from biaslab.config import DATASETS

    m = load_manifest()
    assert set(DATASETS) <= set(m)
    assert all(len(e["sha256"]) == 64 and e["size"] > 0 for ds in m.values() for e in ds["files"])


def test_fetch_from_mirror_then_skip(tmp_path):
    mirror = fixtures.write_all(tmp_path / "mirror")
    man = manifest_for(mirror, "seat")
    rows = fetch_dataset("seat", tmp_path / "raw", mirror=mirror, manifest=man, allow_online=False, timeout=5)
    assert {r["source"] for r in rows} == {"mirror"}
    assert (tmp_path / "raw/seat/sent-bias_tests/weat6.jsonl").read_bytes() == \
        (mirror / "seat/sent-bias_tests/weat6.jsonl").read_bytes()
    rows = fetch_dataset("seat", tmp_path / "raw", mirror=mirror, manifest=man, allow_online=False, timeout=5)
    assert {r["source"] for r in rows} == {"present"}


def test_corrupt_mirror_file_is_refused_and_nothing_written(tmp_path):
    mirror = fixtures.write_all(tmp_path / "mirror")
    man = manifest_for(mirror, "indibias")
    f = mirror / "indibias" / "IndiBias_v1_sample.csv"
    f.write_text(f.read_text().replace("mansion", "palace!"))
    with pytest.raises(FetchError, match=r"indibias: mirror file .*IndiBias_v1_sample.csv does not match"):
        fetch_dataset("indibias", tmp_path / "raw", mirror=mirror, manifest=man, allow_online=False, timeout=5)
    assert not (tmp_path / "raw" / "indibias" / "IndiBias_v1_sample.csv").exists()
    assert not any((tmp_path / "raw").rglob("*.tmp"))


def test_missing_mirror_file_and_offline_errors(tmp_path):
    mirror = fixtures.write_all(tmp_path / "mirror")
    man = manifest_for(mirror, "trec_fair_2022")
    (mirror / "trec_fair_2022" / "selected_topics_22.txt").unlink()
    with pytest.raises(FetchError, match="is not in the mirror"):
        fetch_dataset("trec_fair_2022", tmp_path / "raw", mirror=mirror, manifest=man, allow_online=False, timeout=5)
    with pytest.raises(FetchError, match="BIASLAB_DATA_MIRROR"):
        fetch_dataset("trec_fair_2022", tmp_path / "raw", mirror=None, allow_online=False, manifest=man, timeout=5)
    with pytest.raises(FetchError, match="exists only as a conversion"):
        fetch_dataset("trec_fair_2022", tmp_path / "raw", mirror=None, allow_online=True, manifest=man, timeout=5)
    with pytest.raises(FetchError, match="unknown data set"):
        fetch_dataset("nope", tmp_path / "raw", manifest=man, allow_online=False, timeout=5)


@pytest.fixture
def file_server(tmp_path):
    root = fixtures.write_all(tmp_path / "served")

    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *a, **k):
            super().__init__(*a, directory=str(root), **k)

        def log_message(self, *a):
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield root, f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()


def test_download_from_official_location(file_server, tmp_path, no_network, monkeypatch):
    monkeypatch.delenv("BIASLAB_DATA_MIRROR", raising=False)  # no mirror: fetch goes to the (loopback) source
    root, url = file_server
    man = manifest_for(root, "grep_biasir", url)
    rows, counts = fetch(["grep_biasir"], tmp_path / "raw", mirror=None, manifest=man, allow_online=True, progress=False)
    assert {r["source"] for r in rows} == {"download"}
    assert counts["grep_biasir"] == {"queries": 1, "documents": 14}
    assert no_network == []


def test_download_with_wrong_hash_is_refused(file_server, tmp_path):
    root, url = file_server
    man = manifest_for(root, "trec_fair_2022", url)
    man["trec_fair_2022"]["files"][0]["sha256"] = "0" * 64
    with pytest.raises(FetchError, match="does not match the manifest"):
        fetch_dataset("trec_fair_2022", tmp_path / "raw", manifest=man, allow_online=True, timeout=5)
    assert not (tmp_path / "raw/trec_fair_2022/selected_topics_22.txt").exists()


def test_unreachable_source_says_how_to_work_offline(tmp_path):
    man = {"trec_fair_2022": {"origin": "x", "license": "y", "files": [
        {"path": "selected_topics_22.txt", "size": 1, "sha256": "0" * 64, "url": "http://127.0.0.1:9/none"}]}}
    with pytest.raises(FetchError, match="cannot download .* BIASLAB_DATA_MIRROR"):
        fetch_dataset("trec_fair_2022", tmp_path / "raw", manifest=man, allow_online=True, timeout=2)


def test_schema_check_runs_after_fetch(tmp_path):
    mirror = fixtures.write_all(tmp_path / "mirror")
    (mirror / "trec_fair_2022" / "selected_topics_22.txt").write_text("a\n\nb")
    man = manifest_for(mirror, "trec_fair_2022")
    from biaslab.data import DataError

    with pytest.raises(DataError, match="line 2 is empty"):
        fetch(["trec_fair_2022"], tmp_path / "raw", mirror=mirror, manifest=man, allow_online=False, progress=False)


def test_the_datasets_table_names_origin_licence_and_records():
    man = load_manifest()
    (row,) = dataset_rows({"seat": {"tests": 3, "words": 40}})
    assert row == {"dataset": "seat", "origin": man["seat"]["origin"], "license": man["seat"]["license"],
                   "records": "tests: 3; words: 40"}
