import json

import pandas as pd
import pytest

from biaslab.atomic import atomic_open
from biaslab.io import write_csv, write_json, write_text


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


KILLED_WRITER = """
import sys, time
from pathlib import Path
from biaslab.atomic import atomic_open
target, flag = Path(sys.argv[1]), Path(sys.argv[2])
with atomic_open(target, "wb") as fh:
    fh.write(b"new" * 100_000)
    fh.flush()
    flag.write_text("half written")
    time.sleep(120)  # killed here, in the middle of the write
    fh.write(b"never")
"""


def test_a_write_killed_by_sigkill_leaves_the_old_file_and_the_runner_removes_its_temporary(tmp_path):
    import signal
    import subprocess
    import sys
    import time

    from biaslab.atomic import remove_stale_temps

    target, flag = tmp_path / "out" / "table.csv", tmp_path / "flag"
    write_text(target, "old,complete\n")
    child = subprocess.Popen([sys.executable, "-c", KILLED_WRITER, str(target), str(flag)])
    try:
        deadline = time.monotonic() + 60
        while not flag.exists():
            assert child.poll() is None and time.monotonic() < deadline, "the writer never started writing"
            time.sleep(0.05)
        child.send_signal(signal.SIGKILL)  # no handler, no finally block runs
        assert child.wait(timeout=30) == -signal.SIGKILL
    finally:
        child.kill()
    assert target.read_text() == "old,complete\n"  # the killed write replaced nothing
    [stale] = list(target.parent.glob(".table.csv.*.tmp"))
    assert stale.stat().st_size >= 300_000  # the half-written bytes went only to the temporary
    (tmp_path / "out" / ".other.csv.x.tmp").write_text("another output's temporary")
    assert remove_stale_temps([target, tmp_path / "absent" / "x.csv"]) == [stale]
    assert (tmp_path / "out" / ".other.csv.x.tmp").exists()  # only the given targets' temporaries
    assert remove_stale_temps([tmp_path / "out"]) == [tmp_path / "out" / ".other.csv.x.tmp"]  # a folder target
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["table.csv"]
