"""Kernels forked from a warm interpreter (``biaslab.forkkernel``): what a fresh kernel would see, and the same
lifetimes (interrupt, immediate stop, the runner's death). Byte-identical stage outputs with and without forking are
checked by the integration test, which reruns stages with forking off."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from biaslab import forkkernel, run

pytestmark = pytest.mark.skipif(not forkkernel.enabled(), reason="kernels are forked on Linux only")


def gone(pid: int, within: float = 10.0) -> bool:
    """Whether the process has exited (or is a zombie its parent has not reaped yet) within the time."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as fh:
                if fh.read().split(")")[-1].split()[0] in ("Z", "X"):
                    return True
        except FileNotFoundError:
            return True
        time.sleep(0.05)
    return False


def reply_to(kc, msg_id: str, timeout: float = 60) -> dict:
    """The shell reply to one request (``wait_for_ready`` may leave extra kernel-info replies queued)."""
    while True:
        msg = kc.get_shell_msg(timeout=timeout)
        if msg["parent_header"].get("msg_id") == msg_id:
            return msg["content"]


def execute(kc, code: str, timeout: float = 60) -> tuple[dict, str]:
    """Run code in the kernel: its execute reply's content and what it printed."""
    msg_id = kc.execute(code)
    printed = []
    while True:
        msg = kc.get_iopub_msg(timeout=timeout)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        if msg["msg_type"] == "stream":
            printed.append(msg["content"]["text"])
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            break
    return reply_to(kc, msg_id, timeout), "".join(printed)


class Server:
    """The warm interpreter working in a folder (found, not started, by the test: the launcher starts it)."""

    def __init__(self, folder):
        self.folder = folder

    @property
    def pid(self) -> int | None:
        found = forkkernel.servers(self.folder)
        return found[0] if found else None


@pytest.fixture(scope="module")
def warm(tmp_path_factory):
    """A way to start kernels through the project's kernelspec in this test's own world. Its first kernel is fresh
    (the world's first launch); the second starts the world's warm interpreter, waits for it and is forked."""
    from jupyter_client import KernelManager

    tmp = tmp_path_factory.mktemp("forkkernel")
    saved = dict(os.environ)
    os.environ.update(BIASLAB_CACHE_DIR=str(tmp / "cache"), PYTHONHASHSEED="7", BIASLAB_FORK_IDLE_SECONDS="30",
                      BIASLAB_FORK_KERNELS="1", TQDM_DISABLE="1")
    os.environ["JUPYTER_PATH"] = str(run.ensure_kernel())
    world_env = dict(os.environ)  # the server's world (each test's own cache setting is put back to this)
    try:
        def start(**per_launch):
            os.environ.clear()
            os.environ.update(world_env, **per_launch)
            km = KernelManager(kernel_name=run.KERNEL_NAME)
            km.start_kernel(cwd=str(tmp))
            kc = km.client()
            kc.start_channels()
            kc.wait_for_ready(timeout=90)
            return km, kc

        server = Server(tmp)

        def warmed():  # launch throwaway kernels until the world's server is up (at most two: fresh, then forked)
            for _ in range(2):
                if server.pid is None:
                    km, _kc = start()
                    _kc.stop_channels()
                    km.shutdown_kernel(now=True)
            return server

        start.warmed = warmed
        yield start, server, tmp, world_env
    finally:
        os.environ.clear()
        os.environ.update(saved)
        forkkernel.stop_servers(tmp)


def test_the_first_kernel_of_a_world_is_fresh_and_the_second_forked(warm):
    start, server, _, _ = warm
    shown = {}
    for expected in ("fresh", "forked"):
        km, kc = start()
        try:
            # a wide table's text, as a notebook stores it: the server imported pandas outside a kernel
            reply, out = execute(kc, "import gc, os, sys\npreloaded = 'torch' in sys.modules\nimport pandas as pd\n"
                                     "print(preloaded, os.getppid(), gc.isenabled(), gc.get_freeze_count(), "
                                     "pd.get_option('display.max_columns'))\n"
                                     "print(repr(pd.DataFrame([[f'column value {i}' for i in range(12)]])))")
            assert reply["status"] == "ok", reply
        finally:
            kc.stop_channels()
            km.shutdown_kernel(now=True)
        first, table = out.split("\n", 1)
        preloaded, ppid, enabled, frozen, shown[expected] = first.split(maxsplit=4)
        shown[expected] += table
        assert enabled == "True"  # the collector runs in both
        if expected == "fresh":
            assert preloaded == "False" and int(ppid) == os.getpid() and server.pid is None
        else:  # the preloaded libraries' objects sit in the permanent generation: collections skip them
            assert preloaded == "True" and int(ppid) == server.pid and int(frozen) > 100_000
    assert "..." not in shown["fresh"]
    assert shown["forked"] == shown["fresh"]


def test_a_forked_kernel_sees_what_a_fresh_one_would(warm):
    start, server, tmp, _ = warm
    start.warmed()
    km, kc = start(BIASLAB_KERNEL_RUSAGE=str(tmp / "rusage.json"), BIASLAB_EMBED_STATS="per-launch-value")
    try:
        reply, out = execute(kc, "import os, sys\nprint('torch' in sys.modules, os.getppid(), os.getpid(), "
                                 "os.environ['BIASLAB_EMBED_STATS'], os.getcwd(), hash('biaslab'), "
                                 "os.environ['MPLBACKEND'])")
        assert reply["status"] == "ok", reply
        preloaded, ppid, pid, probe, cwd, hashed, backend = out.split(maxsplit=6)[:7]
        assert preloaded == "True" and int(ppid) == server.pid  # forked from the warm server
        assert probe == "per-launch-value" and os.path.samefile(cwd, tmp)
        fresh = subprocess.run([sys.executable, "-c", "print(hash('biaslab'))"], capture_output=True, text=True,
                               env={**os.environ, "PYTHONHASHSEED": "7"}).stdout.strip()
        assert hashed == fresh  # the environment's hash seed, as in a fresh interpreter
        assert backend.strip() == forkkernel.INLINE_BACKEND

        msg_id = kc.execute("import time\ntime.sleep(60)")
        time.sleep(1.0)
        km.interrupt_kernel()  # SIGINT to the launcher, passed on to the kernel
        reply = reply_to(kc, msg_id, timeout=20)
        assert reply["status"] == "error" and reply["ename"] == "KeyboardInterrupt"
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)  # SIGKILL to the launcher: the kernel goes with it
    assert gone(int(pid))
    assert forkkernel.kernel_peak_rss_mb(tmp / "rusage.json") > 50  # the server reports the kernel's peak memory


def test_a_forked_kernel_dies_with_the_process_that_started_it(warm):
    start, server, tmp, world_env = warm
    start.warmed()
    code = ("import os, sys, time\nfrom jupyter_client import KernelManager\nfrom biaslab import run\n"
            "km = KernelManager(kernel_name=run.KERNEL_NAME); km.start_kernel(cwd=sys.argv[1])\n"
            "kc = km.client(); kc.start_channels(); kc.wait_for_ready(timeout=90)\n"
            "kc.execute_interactive('import os; print(os.getpid(), os.getppid())')\n"
            "sys.stdout.flush(); time.sleep(120)\n")
    parent = subprocess.Popen([sys.executable, "-c", code, str(tmp)], stdout=subprocess.PIPE, text=True,
                              env=world_env)
    try:
        pid, ppid = map(int, parent.stdout.readline().split())
        assert ppid == server.pid
        parent.send_signal(signal.SIGKILL)  # the runner dies without a word
        assert gone(pid)
    finally:
        parent.kill()
        parent.wait()


def test_the_world_ignores_per_launch_variables_and_nothing_else():
    base = {"PATH": "/bin", "PYTHONHASHSEED": "0", "JPY_PARENT_PID": "1"}
    assert forkkernel.world(base, "/x") == forkkernel.world({**base, "JPY_PARENT_PID": "2"}, "/x")
    assert forkkernel.world(base, "/x") == forkkernel.world({**base, forkkernel.RUSAGE_ENV: "f"}, "/x")
    assert forkkernel.world(base, "/x") != forkkernel.world({**base, "PYTHONHASHSEED": "1"}, "/x")
    assert forkkernel.world(base, "/x") != forkkernel.world({**base, "HF_HUB_OFFLINE": "1"}, "/x")
    assert forkkernel.world(base, "/x") != forkkernel.world(base, "/y")
    assert not forkkernel.enabled({"BIASLAB_FORK_KERNELS": "0"})


def test_trouble_finding_a_server_means_a_fresh_kernel(tmp_path, monkeypatch):
    from jupyter_client import KernelManager

    monkeypatch.setenv("BIASLAB_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("JUPYTER_PATH", str(run.ensure_kernel()))
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("BIASLAB_CACHE_DIR", str(tmp_path / "file" / "cache"))  # no marker can be written there
    km = KernelManager(kernel_name=run.KERNEL_NAME)
    km.start_kernel(cwd=str(tmp_path))
    kc = km.client()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=90)
        reply, out = execute(kc, "import os, sys\nprint('torch' in sys.modules, os.getppid())")
        assert reply["status"] == "ok" and out.split() == ["False", str(os.getpid())]  # a fresh kernel, our child
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
