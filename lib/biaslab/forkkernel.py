"""Stage kernels forked from a warm interpreter: the kernelspec's launcher.

    python -m biaslab.forkkernel -f CONNECTION_FILE      (what ``run.ensure_kernel`` writes as the kernel's argv)

Why. Nearly every stage imports torch, transformers, sentence-transformers, scikit-learn and seaborn, and a fresh
kernel pays that import on every stage: 6–8.5 s on the 2-core CPU machine, most of the tiny pipeline's kernel time
and minutes of a full ``dvc repro``. A process forked from one that has already imported them starts with them in
memory (copy-on-write) and imports nothing. No maintained library forks Jupyter kernels from a preloaded process
(ipykernel's fork-a-kernel pull request was closed unmerged; ``multiprocessing``'s forkserver forks only for the
process that started it, and its children are not kernels), so this module does that small part by hand.

How.
- The launcher computes its *world*: the interpreter, the working directory, the installed packages (their
  folders' modification times) and the environment minus the variables that change with every launch
  (``PER_LAUNCH``). A server for that world answers on an abstract Unix socket named after it (Linux; the
  server accepts only its own user, checked with ``SO_PEERCRED``).
- No server yet → on a world's first launch (no marker file under the cache folder yet) the launcher replaces
  itself (``exec``) with ``python -m ipykernel_launcher``, exactly the kernel it ran before this module existed;
  on a later launch it starts the world's server in the background and waits for it (its imports take what the
  fresh kernel's own would), so its kernel is already forked and keeps the server alive through the stage.
- A server imports ``PRELOAD`` once (with the matplotlib backend a kernel sets), then forks a child per request.
  The child takes the launcher's stdin, stdout and stderr, environment, working directory and arguments, and
  runs ipykernel as a fresh kernel would: ipykernel itself and every ``biaslab`` module are imported in the
  child, never preloaded, so edited project code is always the code that runs.
- Lifetimes follow a cold kernel's: the child dies when its launcher dies (a pipe whose end it watches), so
  papermill's immediate kernel stop (SIGKILL to the launcher) stops it; the launcher dies when the process that
  started it (the stage runner) dies, as ipykernel's parent poller makes a cold kernel do; SIGINT, SIGTERM and
  SIGHUP to the launcher are passed to the child; the launcher exits with the child's exit status. The server
  exits ``idle_seconds`` after its last kernel ended, or when its world changes (a new server is then started).
- For the runner's peak-memory figure the server writes the child's ``ru_maxrss`` to ``$BIASLAB_KERNEL_RUSAGE``
  when that variable is set (``kernel_peak_rss_mb``).

Off with ``BIASLAB_FORK_KERNELS=0`` (every kernel is then a fresh process), and off by itself where there is no
``fork`` or no abstract Unix socket (not Linux). Same parameters, same bytes either way: the integration test runs
stages both ways and compares their outputs.

Only the standard library (and ``biaslab.paths``) is imported here: the launcher must start in milliseconds.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import json
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

ENABLE_ENV = "BIASLAB_FORK_KERNELS"
RUSAGE_ENV = "BIASLAB_KERNEL_RUSAGE"
IDLE_ENV = "BIASLAB_FORK_IDLE_SECONDS"
IDLE_SECONDS = 120.0
# what a stage's notebooks import, in the order a cold kernel imports it (numpy before the libraries built on it)
PRELOAD = ("numpy", "scipy.stats", "pandas", "sklearn", "sklearn.linear_model", "sklearn.svm", "torch",
           "transformers", "sentence_transformers", "matplotlib", "matplotlib.pyplot", "seaborn")
# variables that differ between two launches of the same world (Jupyter's parent pid and session, the stage DVC
# runs, the runner's per-stage scratch files, the shell's bookkeeping, a terminal's size); every other variable is
# part of the world. None of them is read by the preloaded libraries; the child gets the launcher's values.
PER_LAUNCH = frozenset({"JPY_PARENT_PID", "JPY_SESSION_NAME", "JPY_INTERRUPT_EVENT", "DVC_STAGE", RUSAGE_ENV,
                        "BIASLAB_EMBED_STATS", "PYTEST_CURRENT_TEST", "PWD", "OLDPWD", "_", "SHLVL", "LINES",
                        "COLUMNS"})
INLINE_BACKEND = "module://matplotlib_inline.backend_inline"  # what ipykernel sets when MPLBACKEND is unset
READY_TIMEOUT = 60.0  # a launcher waits this long for a busy or still-importing server, then starts cold
BIND_TIMEOUT = 20.0  # and this long for a server it started to bind its socket


def enabled(environ=os.environ) -> bool:
    """Whether kernels are forked: on unless ``BIASLAB_FORK_KERNELS=0``, and only on Linux (abstract sockets)."""
    return sys.platform == "linux" and hasattr(os, "fork") and environ.get(ENABLE_ENV, "1") not in ("0", "false", "no")


def world(environ=None, cwd: str | None = None, path: list[str] | None = None) -> str:
    """The key of what a forked kernel inherits from its server: interpreter, this module's file, working directory,
    import path, installed packages (the modification times of the path's package folders) and the environment
    (minus ``PER_LAUNCH``). Two launches with the same key get the same kernel state."""
    environ = dict(os.environ if environ is None else environ)
    packages = []  # an install or uninstall adds or removes a folder there (the working folder's time is no clue)
    for entry in sys.path if path is None else path:
        if os.path.basename(entry) in ("site-packages", "dist-packages"):
            try:
                packages.append((entry, os.stat(entry).st_mtime_ns))
            except OSError:
                continue
    this = Path(__file__)  # an edited server must not serve on: its children run this file's _child
    what = {"python": sys.executable, "version": sys.version, "server": [str(this), this.stat().st_mtime_ns],
            "cwd": cwd or os.getcwd(),
            "path": list(sys.path if path is None else path), "packages": packages,
            "env": sorted((k, v) for k, v in environ.items() if k not in PER_LAUNCH), "preload": PRELOAD}
    return hashlib.sha256(json.dumps(what).encode()).hexdigest()[:32]


def address(key: str) -> str:
    """The server's abstract socket name (no file on disk; it goes when the server goes)."""
    return f"\0biaslab-kernel-{os.getuid()}-{key}"


def listening(key: str) -> bool:
    """Whether a server for this world has bound its socket (it may still be importing)."""
    try:
        with open("/proc/net/unix", encoding="utf-8") as fh:
            return any(line.rstrip().endswith("@" + address(key)[1:]) for line in fh)
    except OSError:
        return False


# --- wire format: an 8-byte length and a JSON body; file descriptors ride on the length's message ---------------

def _send(conn: socket.socket, obj, fds=()) -> None:
    body = json.dumps(obj).encode()
    head = struct.pack("!Q", len(body))
    if fds:
        socket.send_fds(conn, [head], list(fds))
    else:
        conn.sendall(head)
    conn.sendall(body)


def _recv_exact(conn: socket.socket, n: int) -> bytes:
    chunks = []
    while n:
        chunk = conn.recv(n)
        if not chunk:
            raise ConnectionError("peer closed the connection")
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def _recv(conn: socket.socket, maxfds: int = 0):
    if maxfds:
        head, fds, _, _ = socket.recv_fds(conn, 8, maxfds)
        if len(head) < 8:
            head += _recv_exact(conn, 8 - len(head))
    else:
        head, fds = _recv_exact(conn, 8), []
    (n,) = struct.unpack("!Q", head)
    return json.loads(_recv_exact(conn, n)), fds


# --- the launcher -------------------------------------------------------------------------------------------------

def cold(argv: list[str]) -> None:
    """Become a fresh kernel (same pid, so Jupyter's handle on the process stays right)."""
    os.execv(sys.executable, [sys.executable, "-m", "ipykernel_launcher", *argv])


def marker(key: str) -> Path:
    """The file that records a world's first launch; its server's messages go to the same name + ``.log``."""
    from .paths import cache_dir

    return cache_dir() / "kernels" / key


def seen(key: str) -> bool:
    """Whether a kernel of this world was launched before (then a server pays off), marking it launched now: a run
    that starts a single kernel (a one-stage job, a rerun) never pays a server's imports beside its own kernel."""
    path = marker(key)
    if path.exists():
        return True
    path.parent.mkdir(parents=True, exist_ok=True)
    path.touch()
    return False


def start_server(key: str) -> None:
    """Start a server for this world in the background, detached from the caller's terminal and output (what it
    prints goes to its marker's ``.log``)."""
    log = marker(key).with_suffix(".log")
    with open(os.devnull, "rb") as nul_in, open(log, "ab") as out:
        subprocess.Popen([sys.executable, "-m", "biaslab.forkkernel", "--serve", key], stdin=nul_in,
                         stdout=out, stderr=out, start_new_session=True, close_fds=True)


def connect(key: str, ready_within: float = READY_TIMEOUT) -> socket.socket | None:
    """A connection to this world's ready server, or None (no server, or it did not answer in time)."""
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(address(key))
        conn.settimeout(ready_within)
        if conn.recv(1) != b"R":
            raise ConnectionError("server refused")
        conn.settimeout(None)
        return conn
    except OSError:
        conn.close()
        return None


def launch(argv: list[str]) -> int:
    """Run a kernel for ``argv`` (ipykernel's arguments): forked from a warm server when there is one."""
    if not enabled():
        cold(argv)
    try:
        key = world()
        conn = connect(key)
        if conn is None:
            if not seen(key):
                cold(argv)
            # a world's second launch: start its server and wait for it (its imports take what a fresh kernel's
            # own would), so it has this kernel to keep it alive however long the stage runs
            start_server(key)
            deadline = time.monotonic() + BIND_TIMEOUT
            while not listening(key) and time.monotonic() < deadline:
                time.sleep(0.02)
            conn = connect(key)
            if conn is None:
                cold(argv)
    except Exception as err:  # forking only saves time: any trouble finding a server means a fresh kernel
        print(f"biaslab.forkkernel: starting a fresh kernel ({type(err).__name__}: {err})", file=sys.stderr)
        cold(argv)
    parent = os.getppid()
    lifeline_r, lifeline_w = os.pipe()
    request = {"argv": argv, "env": dict(os.environ), "cwd": os.getcwd()}
    try:
        _send(conn, request, fds=(0, 1, 2, lifeline_r))
        reply, _ = _recv(conn)
    except (OSError, ValueError):
        conn.close()
        os.close(lifeline_r)
        os.close(lifeline_w)
        cold(argv)  # the server went away before forking: nothing was started, so a fresh kernel is safe
    os.close(lifeline_r)
    child = int(reply["pid"])

    def forward(signum, _frame):
        with contextlib.suppress(ProcessLookupError):
            os.kill(child, signum)

    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, forward)
    while True:  # the server sends the child's exit status when it has reaped it
        try:
            ready, _, _ = select.select([conn], [], [], 0.5)
        except InterruptedError:
            continue
        if ready:
            try:
                status, _ = _recv(conn)
            except (OSError, ValueError):
                status = {"returncode": 1}
            return int(status.get("returncode", 1))
        if os.getppid() != parent:  # the runner died: stop the kernel, as a cold kernel's parent poller does
            forward(signal.SIGKILL, None)
            return 1


# --- the server ---------------------------------------------------------------------------------------------------

def _peer_uid(conn: socket.socket) -> int:
    creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    return struct.unpack("3i", creds)[1]


def _child(request: dict, fds: list[int], closing: list[socket.socket]) -> None:
    """In the forked child: become the kernel the launcher asked for. Never returns."""
    code = 1
    try:
        for s in closing:
            s.close()
        for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGCHLD):
            signal.signal(signum, signal.default_int_handler if signum == signal.SIGINT else signal.SIG_DFL)
        for target, fd in zip((0, 1, 2), fds[:3], strict=True):
            os.dup2(fd, target)
        lifeline = fds[3]
        for fd in fds[:3]:
            os.close(fd)
        os.set_inheritable(lifeline, False)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])

        def watch():  # the launcher's end closes when it dies (SIGKILL included): die with it
            while True:
                try:
                    if not os.read(lifeline, 1):
                        break
                except InterruptedError:
                    continue
                except OSError:
                    break
            os.kill(os.getpid(), signal.SIGKILL)

        threading.Thread(target=watch, name="biaslab-lifeline", daemon=True).start()
        import ipykernel_launcher  # for its path: sys.argv[0] as in a cold kernel
        from ipykernel import kernelapp

        sys.argv = [ipykernel_launcher.__file__, *request["argv"]]
        kernelapp.launch_new_instance(argv=request["argv"])
        code = 0
    except SystemExit as err:
        code = err.code if isinstance(err.code, int) else (0 if err.code is None else 1)
    except BaseException:  # the child must never fall back into the server's loop
        import traceback

        traceback.print_exc()
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def _write_rusage(path: str, pid: int, maxrss_kb: int | None) -> None:
    from .io import write_json  # atomic; never creates the runner's scratch folder again once it is gone

    write_json(path, {"pid": pid, "maxrss_kb": maxrss_kb})


def serve(key: str, idle_seconds: float) -> int:
    """Listen for this world's launchers, fork a kernel for each; exit when idle or when the world changed."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        listener.bind(address(key))
    except OSError:
        return 0  # another server for this world is already up (or starting)
    listener.listen(64)
    environ, cwd, path = dict(os.environ), os.getcwd(), list(sys.path)
    if not os.environ.get("MPLBACKEND"):
        os.environ["MPLBACKEND"] = INLINE_BACKEND  # imported matplotlib keeps the backend a kernel would set
    import importlib

    for name in PRELOAD:
        with contextlib.suppress(Exception):  # a library that fails to import fails again, visibly, in the kernel
            importlib.import_module(name)
    if "pandas" in sys.modules:
        # pandas picks display.max_columns when imported: 20 inside a Jupyter kernel, 0 (fit the terminal's width,
        # which truncates wide tables to "...") in a plain interpreter such as this one (pandas/core/config_init.py,
        # is_terminal). A forked kernel must print tables as a fresh kernel does.
        sys.modules["pandas"].set_option("display.max_columns", 20)
    # The preloaded libraries' half a million objects go to the collector's permanent generation: a kernel's full
    # collections skip them (transformers' Trainer runs gc.collect at every fit: 0.25 s each here, ~0 frozen), and
    # the forked children's collections no longer write to (copy) the pages those objects share with the server.
    gc.freeze()
    if os.environ.get("MPLBACKEND") == INLINE_BACKEND and "MPLBACKEND" not in environ:
        del os.environ["MPLBACKEND"]  # the child's ipykernel sets it again, as a cold kernel's does
    # variables the imports set (a cold kernel's imports set them too): the child keeps them over its launcher's
    imported = {k: v for k, v in os.environ.items() if environ.get(k) != v}
    children: dict[int, tuple[socket.socket, str | None]] = {}
    last = time.monotonic()
    while True:
        ready, _, _ = select.select([listener], [], [], 0.2)
        if ready:
            conn, _ = listener.accept()
            try:
                if world(environ, cwd, path) != key:  # packages changed under us: make way for a new server
                    conn.close()
                    break
                if _peer_uid(conn) != os.getuid():
                    conn.close()
                    continue
                conn.sendall(b"R")
                conn.settimeout(10.0)
                request, fds = _recv(conn, maxfds=4)
                conn.settimeout(None)
            except (OSError, ValueError):
                conn.close()
                continue
            if len(fds) != 4:
                for fd in fds:
                    os.close(fd)
                conn.close()
                continue
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:
                request["env"].update(imported)
                _child(request, fds, [listener, conn, *(c for c, _ in children.values())])
            for fd in fds:
                os.close(fd)
            usage = request["env"].get(RUSAGE_ENV)
            if usage:
                try:
                    _write_rusage(usage, pid, None)
                except OSError:
                    usage = None
            children[pid] = (conn, usage)
            with contextlib.suppress(OSError):
                _send(conn, {"pid": pid})
        while children:
            try:
                pid, status, rusage = os.wait4(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            conn, usage = children.pop(pid)
            code = os.waitstatus_to_exitcode(status)
            if usage:
                with contextlib.suppress(OSError):
                    _write_rusage(usage, pid, rusage.ru_maxrss)
            with contextlib.suppress(OSError):
                _send(conn, {"returncode": code})
            conn.close()
            last = time.monotonic()
        if not children and time.monotonic() - last > idle_seconds:
            break
    listener.close()
    return 0


def servers(under: str | Path | None = None) -> list[int]:
    """The pids of this user's warm interpreters (those working in a folder under ``under``, or all)."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
            if b"biaslab.forkkernel" not in argv or b"--serve" not in argv or proc.stat().st_uid != os.getuid():
                continue
            if under is None or Path(os.readlink(proc / "cwd")).is_relative_to(Path(under).resolve()):
                found.append(int(proc.name))
        except OSError:
            continue
    return found


def stop_servers(under: str | Path | None = None) -> list[int]:
    """Stop this user's warm interpreters (:func:`servers`); their running kernels end with them. Returns the
    stopped pids. ``python -m biaslab.forkkernel --stop [FOLDER]``."""
    stopped = []
    for pid in servers(under):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
            stopped.append(pid)
    return stopped


def kernel_peak_rss_mb(path: str | Path, within: float = 10.0) -> float | None:
    """The peak resident memory (MB) of a forked kernel, from the file its server writes once it has reaped the
    kernel (``RUSAGE_ENV``); None when no server wrote one (the kernel was a fresh process) or it is not done."""
    path = Path(path)
    if not path.is_file():
        return None
    deadline = time.monotonic() + within
    while True:
        try:
            info = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            info = {}
        if info.get("maxrss_kb") is not None:
            return round(info["maxrss_kb"] * 1024 / 2**20, 1)
        if time.monotonic() > deadline:
            return None
        time.sleep(0.02)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--serve"]:
        return serve(argv[1], float(os.environ.get(IDLE_ENV, IDLE_SECONDS)))
    if argv[:1] == ["--stop"]:
        print(" ".join(map(str, stop_servers(argv[1] if len(argv) > 1 else None))))
        return 0
    if argv[:1] == ["--world"]:  # this environment's key (the name its server answers on)
        print(world())
        return 0
    return launch(argv)


if __name__ == "__main__":
    sys.exit(main())
