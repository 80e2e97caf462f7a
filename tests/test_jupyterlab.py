"""JupyterLab, as the README tells a researcher to start it, opens the notebooks' Jupytext ``.py`` files as
notebooks: the environment-wide settings override the bootstrap installs (``configs/jupyterlab/overrides.json``)
makes Jupytext's notebook the default viewer of Python files, and the server's contents API hands out a stage's
notebook, parameters cell and all. A real server on loopback, with an empty home and Jupyter folders so no user
setting can stand in for the project's."""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from conftest import REPO

pytestmark = pytest.mark.slow

SETTINGS = Path(sys.prefix) / "share" / "jupyter" / "lab" / "settings" / "overrides.json"


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    if not SETTINGS.is_file():
        pytest.skip(f"{SETTINGS} is missing: run scripts/bootstrap.sh, which installs the project's JupyterLab settings")
    home = tmp_path_factory.mktemp("lab-home")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    token = secrets.token_hex(16)
    env = {**os.environ, "HOME": str(home), "JUPYTER_CONFIG_DIR": str(home / "config"),
           "JUPYTER_DATA_DIR": str(home / "data"), "JUPYTER_RUNTIME_DIR": str(home / "runtime")}
    proc = subprocess.Popen([str(Path(sys.executable).parent / "jupyter"), "lab", "--no-browser",
                             "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}",
                             f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={REPO}",
                             *(["--allow-root"] if os.geteuid() == 0 else [])],  # CI runs as root
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    base = f"http://127.0.0.1:{port}"

    def get(path: str) -> dict:
        req = urllib.request.Request(base + path, headers={"Authorization": f"token {token}"})
        with urllib.request.urlopen(req, timeout=30) as resp:
            return json.loads(resp.read())

    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                get("/api/status")
                break
            except OSError:
                if proc.poll() is not None:
                    pytest.fail(f"jupyter lab exited: {proc.stderr.read()[-2000:]}")
                if time.monotonic() > deadline:
                    pytest.fail("jupyter lab did not answer within 90 s")
                time.sleep(0.5)
        yield get
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=30)


def test_python_files_open_as_notebooks_by_default(lab):
    assert json.loads((REPO / "configs/jupyterlab/overrides.json").read_text()) == json.loads(SETTINGS.read_text())
    plugin = lab("/lab/api/settings/@jupyterlab/docmanager-extension:plugin")
    # overrides change the setting's default, which the empty user settings then leave in force
    assert plugin["schema"]["properties"]["defaultViewers"]["default"]["python"] == "Jupytext Notebook"
    assert "defaultViewers" not in plugin["settings"]


def test_the_contents_api_returns_a_stage_notebook_with_its_parameters_cell(lab):
    model = lab("/api/contents/notebooks/ragfair/01_seat_audit.py?type=notebook&content=1")
    assert model["type"] == "notebook"
    cells = model["content"]["cells"]
    tagged = [c for c in cells if "parameters" in c.get("metadata", {}).get("tags", [])]
    assert len(tagged) == 1 and "n_samples" in "".join(tagged[0]["source"])
