"""A toy DVC grid for the sweep tests (tests/test_sweep.py, tests/test_slurm.py): a ``base`` stage, a three-member
``member`` foreach stage and a ``collect`` stage over its outputs, in a fresh git + DVC repository.

A member can be told, by a file in the repository, to fail (``fail`` holding its item) or to hang before it writes
anything (``hang<item>``: cancelled or timed out by the scheduler); it writes its output by temp file and rename, as
the runner does.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

DVC = str(Path(sys.executable).parent / "dvc")

GRID = """
stages:
  base:
    cmd: python -c "open('base.txt', 'w').write('b')"
    outs: [base.txt]
  member:
    foreach: [1, 2, 3]
    do:
      cmd: python member.py ${item}
      deps: [base.txt, member.py]
      outs: ["m${item}.txt"]
  collect:
    cmd: python -c "open('all.txt', 'w').write('+'.join(open(f'm{i}.txt').read() for i in (1, 2, 3)))"
    deps: [m1.txt, m2.txt, m3.txt]
    outs: [all.txt]
"""

MEMBER = """
import os, sys, time
item = sys.argv[1]
print(f"member {item} on {os.environ.get('SLURM_JOB_ID', 'no job')}", flush=True)
if os.path.exists("fail") and open("fail").read().strip() == item:
    sys.exit(1)
if os.path.exists(f"hang{item}"):
    time.sleep(600)
with open(f"m{item}.txt.tmp", "w") as f:
    f.write(open("base.txt").read() * int(item))
os.replace(f"m{item}.txt.tmp", f"m{item}.txt")
"""


def make(root: Path, monkeypatch) -> Path:
    """The grid's repository at ``root`` (created), with this interpreter's tools first on PATH."""
    root.mkdir(parents=True, exist_ok=True)
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv("BIASLAB_ROOT", raising=False)
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    subprocess.run([DVC, "init", "-q"], cwd=root, check=True)
    (root / "dvc.yaml").write_text(GRID)
    (root / "member.py").write_text(MEMBER)
    (root / ".dvcignore").write_text("fail\nhang*\nsweeps/\n")
    return root


def status(root: Path) -> str:
    return subprocess.run([DVC, "status"], cwd=root, capture_output=True, text=True, check=True).stdout
