import json

import pandas as pd
import pytest

from biaslab.io import atomic_open, write_csv, write_json


def test_write_json_is_sorted_and_replaces(tmp_path):
    path = tmp_path / "sub" / "m.json"
    write_json(path, {"b": 1, "a": 2})
    assert path.read_text() == '{\n  "a": 2,\n  "b": 1\n}\n'
    write_json(path, {"c": 3})
    assert json.loads(path.read_text()) == {"c": 3}


def test_failed_write_keeps_old_file_and_leaves_no_temp(tmp_path):
    path = tmp_path / "t.txt"
    path.write_text("old")
    with pytest.raises(RuntimeError), atomic_open(path) as fh:
        fh.write("half")
        raise RuntimeError("interrupted")
    assert path.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["t.txt"]


def test_write_csv_roundtrip(tmp_path):
    df = pd.DataFrame({"x": [1.0, 2.5], "y": ["a", "b"]})
    write_csv(tmp_path / "t.csv", df)
    assert pd.read_csv(tmp_path / "t.csv").equals(df)


def test_write_json_writes_missing_values_as_null(tmp_path):
    import numpy as np

    path = tmp_path / "m.json"
    write_json(path, {"std": float("nan"), "x": [np.float64("inf"), np.float32(1.5)], "arr": np.array([np.nan, 2.0])})
    text = path.read_text()
    assert "NaN" not in text and "Infinity" not in text
    assert json.loads(text) == {"arr": [None, 2.0], "std": None, "x": [None, 1.5]}


def test_atomic_files_get_the_usual_mode(tmp_path):
    import os

    mask = os.umask(0o022)
    try:
        write_json(tmp_path / "m.json", {"a": 1})
    finally:
        os.umask(mask)
    assert (tmp_path / "m.json").stat().st_mode & 0o777 == 0o644
