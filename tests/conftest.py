from __future__ import annotations

import os
import shutil
import socket
import sys
from pathlib import Path

import pytest

# The suite runs on two pytest-xdist workers (pyproject's addopts: the integration pipeline on one, the other test
# files on the other), so torch's OpenMP threads of two processes share the cores. By default an idle OpenMP thread
# spins before it sleeps and takes the cycles the other process needs: two concurrent runs of one training test took
# 28.3 s against 16.4 s with passive waiting (alone: 15.2 s). Set before torch loads, here and in every process the
# tests start (the pipeline's kernels inherit it); it changes how threads wait, never what they compute.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
# While the tiny pipeline builds, three processes compute at once (its two copies and the other worker's tests), and
# torch's default of a thread per core in each puts three threads on every core: three concurrent tiny fairrank
# trainings on 2 cores took 111 s with 2 threads each against 96 s with 1 (2026-12-03). Each gets a third of the
# cores (at least one). Thread counts change no test's verdict: every comparison of bytes is between runs of this
# one setting.
_CORES = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1  # no affinity on macOS
os.environ.setdefault("OMP_NUM_THREADS", str(max(1, _CORES // 3)))

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).parent))

from biaslab import config  # noqa: E402

import fixtures  # noqa: E402

# The repository's parameters: tests take knob values from here (never from copies), e.g. PARAMS.models for model
# resolution and PARAMS.common.batch_size for encoding.
PARAMS = config.load_params(REPO / "params.yaml")
GREEDY = __import__("biaslab.llm", fromlist=["GenParams"]).GenParams(max_new_tokens=64, temperature=0.0, top_p=1.0,
                                                                      seed=0)  # the tests' own generation settings


def pytest_collection_modifyitems(config, items):
    """The integration module first and its reruns module last (pyproject runs pytest-xdist's file scheduling in
    collection order): one worker starts the tiny pipeline at once, the other runs the unit tests, then the reruns
    module, which waits for that pipeline and works on a copy of it beside the first module's tests
    (``tests/tiny_pipeline.py``)."""
    rank = {"test_integration.py": 0, "test_integration_reruns.py": 2}
    items.sort(key=lambda item: rank.get(item.path.name, 1))  # stable: the order within each rank is kept


def model_dir(name: str) -> Path:
    """The loadable folder of a registered model, resolved with the repository's ``models`` settings."""
    from biaslab import models

    return models.preflight([name], PARAMS.models)[name]


@pytest.fixture(autouse=True)
def _test_cache(monkeypatch):
    """Tests use their own cache folder, never the pipeline's. It persists between local runs so the one-off
    SmolLM2 conversion (~40 s) is paid once; every entry is content-keyed, so reuse cannot change a result."""
    monkeypatch.setenv("BIASLAB_CACHE_DIR", str(REPO / ".cache" / "biaslab-tests"))
    monkeypatch.setenv("TQDM_DISABLE", "1")
    yield


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A minimal project root (params.yaml + dvc.yaml of the repo) with BIASLAB_ROOT pointing at it."""
    root = tmp_path / "project"
    root.mkdir()
    for name in ("params.yaml", "dvc.yaml"):
        shutil.copy(REPO / name, root / name)
    monkeypatch.setenv("BIASLAB_ROOT", str(root))
    return root


@pytest.fixture
def raw_dir(tmp_path) -> Path:
    return fixtures.write_all(tmp_path / "raw")


@pytest.fixture(scope="session")
def slurm():
    """A real single-node SLURM cluster for this test process, SLURM_CONF pointing at it (tests/slurm_cluster.py);
    the test skips, naming what is missing, where the packages or root are not there."""
    import slurm_cluster

    reason = slurm_cluster.missing()
    if reason:
        pytest.skip(reason)
    before = os.environ.get("SLURM_CONF")
    with slurm_cluster.start() as cluster:
        os.environ["SLURM_CONF"] = str(cluster.conf)
        try:
            yield cluster
        finally:
            os.environ.pop("SLURM_CONF") if before is None else os.environ.__setitem__("SLURM_CONF", before)


@pytest.fixture(scope="session")
def minilm():
    from biaslab.models import load_sentence_transformer

    return load_sentence_transformer(model_dir("minilm"), "cpu")


class NetworkAttempt(AssertionError):
    pass


@pytest.fixture
def no_network(monkeypatch):
    """Block every socket connection except to loopback; record attempts so a test can assert none happened."""
    attempts: list = []
    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex
    real_getaddrinfo = socket.getaddrinfo

    def _loopback(address) -> bool:
        if isinstance(address, (str, bytes)):  # AF_UNIX
            return True
        host = address[0]
        return host in ("localhost", "::1") or str(host).startswith("127.")

    def guard_connect(self, address):
        if not _loopback(address):
            attempts.append(address)
            raise NetworkAttempt(f"blocked network connection to {address}")
        return real_connect(self, address)

    def guard_connect_ex(self, address):
        if not _loopback(address):
            attempts.append(address)
            raise NetworkAttempt(f"blocked network connection to {address}")
        return real_connect_ex(self, address)

    def guard_getaddrinfo(host, *args, **kwargs):
        if host not in (None, "localhost", "::1") and not str(host).startswith("127."):
            attempts.append(host)
            raise NetworkAttempt(f"blocked name lookup of {host}")
        return real_getaddrinfo(host, *args, **kwargs)

    monkeypatch.setattr(socket.socket, "connect", guard_connect)
    monkeypatch.setattr(socket.socket, "connect_ex", guard_connect_ex)
    monkeypatch.setattr(socket, "getaddrinfo", guard_getaddrinfo)
    return attempts


def mirror_dir() -> Path | None:
    value = os.environ.get("BIASLAB_DATA_MIRROR")
    return Path(value).resolve() if value and Path(value).is_dir() else None
