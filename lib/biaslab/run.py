"""Execute one notebook stage with papermill.

    python -m biaslab.run STAGE [--set name=value ...] [--out PATH]

The stage (in dvc.yaml, resolved by DVC) names the notebook (its ``notebooks/*.py`` dependency), the executed copy
(its ``.ipynb`` output) and the params.yaml keys it reads. The notebook reads those values from params.yaml itself
(``config.stage_params``); the runner injects only what differs from params.yaml: the member written in the stage's
own ``cmd`` (``--set run=...``, so ``python -m biaslab.run name@member`` equals ``dvc repro name@member``) and the
``--set`` overrides of the command line (a papermill-style rerun with new parameters). Overrides are validated with
the stage's schema before any kernel starts. The Jupytext ``.py`` is converted in memory and executed in a kernel
that runs *this* interpreter (never a stray user-level kernelspec), with the repository root as working directory,
``PYTHONHASHSEED`` set to the stage's effective ``common.seed``, progress bars off and the Hugging Face stack
offline unless ``models.allow_downloads`` is true.

Before the kernel starts, the ``data/raw`` files the stage reads are checked against the data manifest's size
and SHA-256 (:mod:`biaslab.rawcheck`; cached on size and mtime): a file that differs stops the stage, nothing
written.

The executed notebook is stripped of run metadata (timestamps, durations, random cell ids) and written
atomically only when every cell succeeded; a failed run is kept under the cache folder for inspection
and the command exits non-zero, leaving the stage's previous outputs untouched. Temporary files that a killed run
left beside or inside the stage's outputs are removed before the kernel starts.

With ``--plain`` the cells run as a script in a fresh interpreter instead of a kernel (:func:`run_script`), for a
machine without Jupyter, papermill or Jupytext (a bare GPU image, with ``biaslab.stages`` reading a frozen
resolution where DVC is missing too): the same parameters, environment and files, but no executed notebook.

Timings stay out of the outputs (they would change every run); with ``BIASLAB_TIMINGS=FILE`` set, each run
appends one JSON line to FILE — the stage, its wall time, the time outside its cells (kernel start-up) and its
slowest cells — to see where a pipeline spends its time (``biaslab timings FILE`` tabulates them).
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import functools
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from . import config, rawcheck, stages, usage
from .atomic import remove_stale_temps
from .io import write_text
from .paths import cache_dir, repo_root, resolve

KERNEL_NAME = "biaslab-python"

# nbformat (papermill, jupytext) imports jsonschema, whose format checkers import rfc3987-syntax when it is installed
# (JupyterLab pulls it in); that package compiles ~40 lark grammars at import — over 2 s per stage, for an "iri"
# format check that notebook validation never uses. jsonschema skips the check when the import fails.
sys.modules.setdefault("rfc3987_syntax", None)


def parameter_names(nb) -> set[str]:
    """Names assigned in the notebook's ``parameters`` cell (error if there is none); ``nb`` is a notebook or the
    list of :func:`percent_cells`."""
    for cell in getattr(nb, "cells", nb):
        if cell["cell_type"] == "code" and "parameters" in cell.get("metadata", {}).get("tags", []):
            names: set[str] = set()
            for node in ast.parse(cell["source"]).body:
                targets = node.targets if isinstance(node, ast.Assign) else (
                    [node.target] if isinstance(node, ast.AnnAssign) else [])
                names.update(t.id for t in targets if isinstance(t, ast.Name))
            return names
    raise stages.StageError('the notebook has no cell tagged "parameters" (# %% tags=["parameters"])')


_MARKER = re.compile(r"^# %%(?: \[(?P<kind>\w+)\])?(?P<rest>.*)$")


def percent_cells(text: str) -> list[dict[str, Any]]:
    """The cells of a Jupytext percent-format script, as notebook cells (``cell_type``, ``metadata.tags``,
    ``source``) plus ``line``, the 0-based line of the file where the cell's source starts. Read by hand (a
    ``# %%`` line opens a cell, ``[markdown]`` makes it text, ``tags=[...]`` tags it) so that a stage runs where
    Jupytext is not installed (:func:`execute` with ``plain``); the text before the first marker is the header."""
    cells: list[dict[str, Any]] = []
    for n, line in enumerate(text.splitlines()):
        m = _MARKER.match(line)
        if m:
            tags = re.search(r"tags=(\[.*?\])", m["rest"])
            cells.append({"cell_type": "markdown" if m["kind"] == "markdown" else "code", "line": n + 1,
                          "metadata": {"tags": ast.literal_eval(tags[1]) if tags else []}, "lines": []})
        elif cells:
            cells[-1]["lines"].append(line)
    for cell in cells:
        cell["source"] = "\n".join(cell.pop("lines")).rstrip("\n")
    return cells


def ensure_kernel() -> Path:
    """A kernelspec that runs the current interpreter (an ordinary ``ipykernel`` kernel), in a private Jupyter
    data folder, so a stage never runs in a stray user-level kernelspec's environment."""
    root = cache_dir() / "jupyter"
    spec_dir = root / "kernels" / KERNEL_NAME
    spec = {
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "biaslab (project interpreter)",
        "language": "python",
        "metadata": {"debugger": False},
    }
    text = json.dumps(spec, indent=1)
    path = spec_dir / "kernel.json"
    if not path.is_file() or path.read_text() != text:
        write_text(path, text)
    return root


def scrub_paths(text: str, root: Path, library: Path | None = None) -> str:
    """Machine-specific absolute paths in outputs (warnings, tracebacks) become relative placeholders. The folder
    the ``biaslab`` package was imported from (``library``, by default this module's ``lib/``) reads as
    ``<repo>/lib`` wherever it lies — an editable install of another checkout names its own path in a warning, and
    the executed notebook would otherwise carry that machine path (for the repository's own ``lib/`` nothing
    changes)."""
    for prefix, label in _path_labels(Path(root), Path(__file__).parents[1] if library is None else library):
        text = text.replace(prefix, label)
    return text


@functools.cache
def _path_labels(root: Path, library: Path) -> tuple[tuple[str, str], ...]:
    """(prefix, placeholder) pairs in the order :func:`scrub_paths` applies them, worked out once per notebook
    root rather than for every output. The library's pair comes first and only for a ``lib/`` folder outside the
    environment (a non-editable install is already ``<env>``); for the repository's own ``lib/`` it is the
    identity."""
    pairs = ((str(Path(sys.prefix)), "<env>"), (str(root), "<repo>"), (str(Path.home()), "~"))
    if library.name == "lib" and not library.is_relative_to(sys.prefix):
        return ((f"{library}{os.sep}", f"<repo>/lib{os.sep}"), *pairs)
    return pairs


def strip_run_metadata(nb, root: Path | None = None) -> None:
    """Remove what changes on every run so identical results give identical files; with ``root``, also
    replace absolute paths in text outputs (they would differ per machine)."""
    nb.metadata.pop("papermill", None)
    nb.metadata.pop("widgets", None)
    nb.metadata.pop("jupytext", None)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    for i, cell in enumerate(nb.cells):
        cell["id"] = f"cell-{i:03d}"
        cell.metadata.pop("papermill", None)
        cell.metadata.pop("execution", None)
        cell.metadata.pop("ExecuteTime", None)
        if root is None or cell.cell_type != "code":
            continue
        for out in cell.get("outputs", []):
            if "text" in out:
                out["text"] = scrub_paths(out["text"], root)
            if "traceback" in out:
                out["traceback"] = [scrub_paths(t, root) for t in out["traceback"]]
            for key in ("text/plain", "text/html"):
                if key in out.get("data", {}):
                    out["data"][key] = scrub_paths(out["data"][key], root)


def cell_timings(nb) -> list[dict[str, Any]]:
    """Each code cell's papermill duration (seconds) with its first source line."""
    out = []
    for i, cell in enumerate(nb.cells):
        duration = cell.metadata.get("papermill", {}).get("duration")
        if cell.cell_type == "code" and duration is not None:
            first = next((ln for ln in cell.source.splitlines() if ln.strip()), "")
            out.append({"cell": i, "seconds": round(float(duration), 2), "source": first[:80]})
    return out


def peak_rss_mb() -> float:
    """The largest resident set (MB) of this process and of every child it has waited for — for a stage run, the
    notebook's kernel or the plain script (``getrusage``'s ``ru_maxrss``, kilobytes on Linux, bytes on macOS). This
    process's own peak is read from ``/proc/self/status`` (``VmHWM``) where there is one: on Linux, ``RUSAGE_SELF``
    carries the peak of the process that started this one across ``exec``, so a runner started by a large process
    (scripts/device_check.sh's, after its timed training) would report that process's size for every stage."""
    import resource

    unit = 1 if sys.platform == "darwin" else 1024
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * unit
    try:
        status = Path("/proc/self/status").read_text()
        own = int(re.search(r"^VmHWM:\s*(\d+) kB", status, re.M)[1]) * 1024
    except (OSError, TypeError):
        own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * unit
    return round(max(peak, own) / 2**20, 1)


def record_timings(path: Path, stage: str, cells: list[dict[str, Any]], wall: float, top: int = 5,
                   embeddings: dict | None = None, peak_mb: float | None = None,
                   peak_gpu_mb: float | None = None) -> None:
    """Append one JSON line: the stage's wall time, the time outside its ``cells`` (:func:`cell_timings`; kernel
    start-up, papermill), its ``top`` slowest cells, its embedding-cache use (:func:`biaslab.usage.usage_summary`),
    its peak resident memory (:func:`peak_rss_mb`) and, on a GPU, its peak GPU memory. Appending a line is atomic
    enough for a log; it is never an output of a stage."""
    record = {"stage": stage, "wall_s": round(wall, 2),
              "outside_cells_s": round(wall - sum(c["seconds"] for c in cells), 2),
              "slowest_cells": sorted(cells, key=lambda c: -c["seconds"])[:top]}
    if peak_mb is not None:
        record["peak_rss_mb"] = peak_mb
    if peak_gpu_mb is not None:
        record["peak_gpu_mb"] = peak_gpu_mb
    if embeddings is not None:
        record["embeddings"] = embeddings
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as f:
        f.write(json.dumps(record) + "\n")


def read_timings(path: str | Path) -> list[dict[str, Any]]:
    """The records :func:`record_timings` appended to ``path``, in run order."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no timings logged — run stages with BIASLAB_TIMINGS={path}")
    records = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError as err:
            raise ValueError(f"{path}, line {n}: not a timings record ({err})") from None
    return records


def summarise_timings(path: str | Path, cells: int = 1) -> str:
    """A table of the runs logged by :func:`record_timings`, in run order, with the total."""
    lines, total, unique, hits = [], 0.0, 0, 0
    for r in read_timings(path):
        total += r["wall_s"]
        emb = r.get("embeddings") or {}
        unique, hits = unique + emb.get("unique", 0), hits + emb.get("hits", 0)
        rate = f"{emb['hits']:>6}/{emb['unique']:<6}" if emb.get("unique") else f"{'':13}"
        slow = "; ".join(f"{c['seconds']:.1f}s {c['source']}" for c in r["slowest_cells"][:cells])
        peak = f"{r['peak_rss_mb']:8.0f}" if r.get("peak_rss_mb") is not None else f"{'':8}"
        lines.append(f"{r['wall_s']:8.1f} {r['outside_cells_s']:8.1f} {peak} {rate} "
                     f"{r['stage']:<40} {slow}")
    head = (f"{'wall s':>8} {'start s':>8} {'peak MB':>8} {'cache hits':<13} {'stage':<40} "
            "slowest cell(s)")
    rate = f"; embedding cache: {hits}/{unique} distinct texts were hits ({hits / unique:.0%})" if unique else ""
    return "\n".join([head, *lines, f"{total:8.1f}  total over {len(lines)} runs{rate}"])


def parse_sets(items: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in items:
        if "=" not in item:
            raise config.ParamsError(f"--set {item!r}: expected name=value")
        name, value = item.split("=", 1)
        out[name.strip()] = yaml.safe_load(value)
    return out


def resolve_sets(sets: dict[str, Any], stage: str, declared: set[str], root: Path) -> dict[str, Any]:
    """``--set`` overrides as the notebook's parameter names: each key is a parameters-cell name (``seed``) or a
    params.yaml key the stage reads (``common.seed``); a key inside a listed mapping (``ragfair.train.runs.lora.
    alpha`` where the stage reads ``ragfair.train.runs``) overrides that one entry of the params.yaml value.
    Anything else is an error naming what the stage takes, with the closest match."""
    import copy

    by_key = {dotted: name for name, dotted in config.leaf_names(
        stages.params_keys(stages.resolve(stage, root))).items()}
    raw = None
    out: dict[str, Any] = {}
    for given, value in sets.items():
        if given in declared or (given not in by_key and "." not in given):
            out[given] = value  # a cell name, or an unknown short name that execute() reports
            continue
        if given in by_key:
            out[by_key[given]] = value
            continue
        leaf = next((k for k in by_key if given.startswith(k + ".")), None)
        if leaf is None:
            raise config.ParamsError(
                f"--set {given}: stage {stage!r} reads no params.yaml key {given!r}"
                f"{stages.did_you_mean(given, [*by_key, *declared])}; it takes its parameters cell's names or the keys it "
                f"reads: {', '.join(sorted(by_key))}")
        name = by_key[leaf]
        if name not in out:
            raw = raw if raw is not None else config.read_yaml(config.params_path(root))
            node = raw
            for part in leaf.split("."):
                node = node[part]
            out[name] = copy.deepcopy(node)
        node = out[name]
        *inner, last = given[len(leaf) + 1:].split(".")
        for part in inner:
            if not isinstance(node, dict) or part not in node:
                raise config.ParamsError(f"--set {given}: {leaf} has no entry {part!r}"
                                         f"{stages.did_you_mean(part, node if isinstance(node, dict) else [])}")
            node = node[part]
        if not isinstance(node, dict):
            raise config.ParamsError(f"--set {given}: {given.rsplit('.', 1)[0]} is not a mapping")
        node[last] = value
    return out


def execute(stage: str, sets: dict[str, Any] | None = None, out: Path | None = None, *,
            plain: bool = False) -> Path | None:
    """Run ``stage`` with ``sets`` on top of params.yaml and return its executed notebook. With ``plain``, the
    notebook's cells run as a script in a fresh interpreter instead (:func:`run_script`): no Jupyter, papermill or
    Jupytext is needed, the stage's files are written alike, but no executed notebook (returns None)."""
    root = repo_root()
    parameters = parse_sets([f"{k}={v}" for k, v in stages.stage_sets(stage, root).items()])
    parameters.update(sets or {})
    nb_path = stages.stage_notebook(stage, root)
    out = Path(out) if out else stages.stage_executed_notebook(stage, root)
    if not nb_path.is_file():
        raise stages.StageError(f"stage {stage!r}: notebook {nb_path} not found")
    if plain:
        nb = percent_cells(nb_path.read_text(encoding="utf-8"))
    else:
        import jupytext

        nb = jupytext.read(nb_path)
    declared = parameter_names(nb)
    parameters = resolve_sets(parameters, stage, declared, root)
    unknown = sorted(set(parameters) - declared)
    if unknown:
        hint = "".join(stages.did_you_mean(u, declared) for u in unknown)
        raise config.ParamsError(
            f"{nb_path.relative_to(root)}: parameters {unknown} are not in its parameters cell{hint} "
            f"(it declares {sorted(declared)}; --set also takes the params.yaml keys the stage reads, e.g. "
            f"common.seed=1)"
        )
    # the values the notebook will compute with: params.yaml + these overrides, validated before any kernel starts
    effective = config.stage_params(parameters, stage, root, check_hash_seed=False)
    keys = effective.keys_listed
    seed = effective.common.seed if ("common" in keys or "common.seed" in keys) else 0
    allow_downloads = bool(config.read_yaml(config.params_path(root)).get("models", {}).get("allow_downloads"))
    # the data/raw files it reads match the manifest, before anything is written
    rawcheck.verify_stage(stage, root, resolve(config.load_params(config.params_path(root), ["data"]).data.raw_dir, root))

    if not plain:
        os.environ["JUPYTER_PATH"] = os.pathsep.join(
            [str(ensure_kernel()), *filter(None, [os.environ.get("JUPYTER_PATH")])])
    os.environ["BIASLAB_ROOT"] = str(root)
    os.environ["TQDM_DISABLE"] = "1"
    os.environ["PYTHONHASHSEED"] = str(seed)  # the kernel inherits it: string hashing follows the stage's seed
    offline = "0" if allow_downloads else "1"
    for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE"):
        os.environ[var] = offline
    os.environ["BIASLAB_ALLOW_DOWNLOADS"] = "1" if allow_downloads else "0"

    for stale in remove_stale_temps(root / o for o in stages.outs(stage, root)):
        print(f"biaslab.run: removed {stale.relative_to(root)}, left by an interrupted run", file=sys.stderr)
    tmp_dir = Path(tempfile.mkdtemp(prefix="biaslab-run-"))
    timings = os.environ.get("BIASLAB_TIMINGS")
    stats_file = tmp_dir / "embedding_usage.jsonl"
    if timings:  # the kernel's encoders log their cache hits there
        os.environ[usage.STATS_ENV] = str(stats_file)
    started = time.perf_counter()
    executed, gpu_mb = None, None
    try:
        if plain:
            cells, gpu_mb = _run_plain(stage, nb_path, parameters, root, tmp_dir)
        else:
            executed = _run_papermill(stage, nb, nb_path, parameters, root, tmp_dir / out.name)
            cells = cell_timings(executed)
        wall = time.perf_counter() - started
        used = usage.usage_summary(stats_file) if timings else None
    finally:
        os.environ.pop(usage.STATS_ENV, None)
        shutil.rmtree(tmp_dir, ignore_errors=True)
    if timings:
        record_timings(Path(timings), stage, cells, wall, embeddings=used, peak_mb=peak_rss_mb(), peak_gpu_mb=gpu_mb)
    if executed is None:
        return None
    strip_run_metadata(executed, root)
    import nbformat

    write_text(out, nbformat.writes(executed) + "\n")
    return out


@contextlib.contextmanager
def kernel_channels():
    """How papermill's client talks to the stage's kernel: on POSIX through local sockets (ZeroMQ's ipc transport)
    in a private temporary folder (mode 700, removed afterwards), so that on a shared machine — a cluster's compute
    node running `biaslab sweep` jobs — no other user can connect to the kernel's channels and read what they carry,
    as they can on its TCP ports of localhost (ipykernel warns of that in every stage's log otherwise); TCP where
    there are no such sockets (Windows) or where ``$TMPDIR`` is too long a path for one. Yields the keyword papermill
    passes on to the client's kernel manager."""
    if os.name != "posix":
        yield {}
        return
    from traitlets.config import Config

    with tempfile.TemporaryDirectory(prefix="biaslab-kernel-") as folder:
        ip = os.path.join(folder, "kernel")  # the kernel's five sockets: kernel-1 ... kernel-5
        # a socket's path has at most 107 bytes on Linux, 103 on macOS
        yield {"config": Config({"KernelManager": {"transport": "ipc", "ip": ip}})} if len(ip) < 96 else {}


def _run_papermill(stage: str, nb, nb_path: Path, parameters: dict[str, Any], root: Path, tmp_out: Path):
    """The notebook executed by papermill in the project's kernel; a failed run is kept under the cache folder."""
    import papermill

    try:
        with kernel_channels() as channels:
            return papermill.execute_notebook(
                nb, str(tmp_out), parameters=parameters, kernel_name=KERNEL_NAME, language="python",
                cwd=str(root), progress_bar=False, log_output=False,
                # every cell has returned and its outputs are in the notebook; a stage writes its files inside
                # cells (atomic renames, committed SQLite transactions), so waiting for the interpreter to tear
                # torch down (a graceful shutdown: ~1.5 s a stage) keeps nothing that a stopped kernel loses
                shutdown_kernel="immediate", **channels,
            )
    except papermill.PapermillExecutionError as err:
        failed = cache_dir() / "failed" / f"{stage.replace('@', '_')}.ipynb"
        failed.parent.mkdir(parents=True, exist_ok=True)
        if tmp_out.is_file():
            os.replace(tmp_out, failed)
        raise RuntimeError(
            f"stage {stage!r} failed in {nb_path.relative_to(root)} (cell {err.cell_index}): "
            f"{err.ename}: {err.evalue}\n  executed notebook with the traceback: {failed}"
        ) from None


def _run_plain(stage: str, nb_path: Path, parameters: dict[str, Any], root: Path,
               tmp_dir: Path) -> tuple[list[dict[str, Any]], float | None]:
    """:func:`run_script` in a fresh interpreter (it inherits ``PYTHONHASHSEED`` and the rest of the stage's
    environment, as a kernel would); its cells' timings and peak GPU memory."""
    injected = "".join(f"{name} = {value!r}\n" for name, value in parameters.items())
    report = tmp_dir / "cells.json"
    proc = subprocess.run([sys.executable, "-c", "import sys; from biaslab.run import run_script; "
                           "run_script(*sys.argv[1:])", str(nb_path), injected, str(report)], cwd=root,
                          env={**os.environ, "MPLBACKEND": "Agg"})  # figures to files only: no display to show them
    if proc.returncode != 0:
        raise RuntimeError(f"stage {stage!r} failed in {nb_path.relative_to(root)} (exit {proc.returncode}; the "
                           "traceback above names the line)")
    done = json.loads(report.read_text(encoding="utf-8"))
    return done["cells"], done["peak_gpu_mb"]


def run_script(path: str, injected: str, report: str) -> None:
    """Run the code cells of the percent-format notebook ``path`` in one namespace, as a kernel would, with the
    assignments ``injected`` right after its parameters cell (papermill's injected cell); write each cell's
    seconds and the peak GPU memory to ``report`` (JSON). Tracebacks name the notebook's own lines; ``display``
    prints. It changes nothing in the process's environment (a kernel started later by the same process, as in a
    test, would inherit it)."""
    namespace: dict[str, Any] = {"__name__": "__main__", "__file__": path,
                                 "display": lambda *objs, **_: print(*objs, sep="\n")}
    timings = []
    for i, cell in enumerate(percent_cells(Path(path).read_text(encoding="utf-8"))):
        if cell["cell_type"] != "code":
            continue
        started = time.perf_counter()
        exec(compile("\n" * cell["line"] + cell["source"], path, "exec"), namespace)
        if "parameters" in cell["metadata"]["tags"]:
            exec(compile(injected, f"{path} (injected parameters)", "exec"), namespace)
        first = next((ln for ln in cell["source"].splitlines() if ln.strip()), "")
        timings.append({"cell": i, "seconds": round(time.perf_counter() - started, 2), "source": first[:80]})
    torch = sys.modules.get("torch")
    gpu = torch is not None and torch.cuda.is_available()
    write_text(Path(report), json.dumps({"cells": timings, "peak_gpu_mb": round(
        torch.cuda.max_memory_allocated() / 2**20, 1) if gpu else None}))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m biaslab.run", description=__doc__.split("\n\n")[0])
    ap.add_argument("stage", help="stage name in dvc.yaml (name@member for foreach stages)")
    ap.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                    help="override one value (YAML): a parameters-cell name (seed=1) or a params.yaml key the stage "
                         "reads (common.seed=1); repeatable")
    ap.add_argument("--out", type=Path, help="where to write the executed notebook (default: the stage's .ipynb out)")
    ap.add_argument("--plain", action="store_true",
                    help="run the notebook's cells as a script, without Jupyter or papermill (writes no executed "
                         "notebook): for a machine without them")
    args = ap.parse_args(argv)
    from .data import DataError

    try:
        out = execute(args.stage, parse_sets(args.set), args.out, plain=args.plain)
    except (config.ParamsError, stages.StageError, DataError) as err:  # invalid command or input: nothing ran
        print(f"biaslab.run: {err}", file=sys.stderr)
        return 2
    except (RuntimeError, FileNotFoundError) as err:  # the stage ran and failed
        print(f"biaslab.run: {err}", file=sys.stderr)
        return 1
    print(f"biaslab.run: {args.stage} -> {out or 'done (plain: no executed notebook)'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
