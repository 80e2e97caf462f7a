"""The pipeline's stage declarations, read through DVC's own resolver.

dvc.yaml is the single place a stage is declared: its notebook (the ``notebooks/*.py`` dependency), its executed
copy (the ``.ipynb`` output), the params.yaml keys it reads and the member it runs (``--set`` in its ``cmd``).
``foreach`` members, ``${item}`` / ``${key}`` substitution and params interpolation are resolved by DVC itself
(``dvc.parsing.DataResolver`` through the repository's dvc.yaml), so ``biaslab run name@member`` sees exactly
the stage ``dvc repro name@member`` runs.

A machine without DVC (a bare GPU image) reads the same resolution from a file that :func:`freeze` wrote where DVC
is installed, named by ``BIASLAB_STAGES``; it is tied to the bytes of dvc.yaml and params.yaml it was resolved
from, so a stale file stops with the command that rewrites it.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
from collections.abc import Callable, Iterable
from itertools import pairwise
from pathlib import Path
from typing import Any

from .paths import repo_root


class StageError(ValueError):
    """A stage is missing from dvc.yaml or is not declared in the project's notebook-stage form."""


_RESOLVERS: dict[tuple[str, str], Any] = {}
FROZEN_ENV = "BIASLAB_STAGES"


def _stamp(root: Path) -> str:
    return hashlib.sha256(b"".join((root / f).read_bytes() if (root / f).is_file() else b""
                                   for f in ("dvc.yaml", "params.yaml"))).hexdigest()


class _Frozen:
    """The two calls this module makes of DVC's resolver, answered from a :func:`freeze` file."""

    def __init__(self, keys: list[str], stages: dict[str, Any], upstream: dict[str, list[str]]):
        self.keys, self.stages, self.upstream = keys, stages, upstream

    def get_keys(self) -> list[str]:
        return list(self.keys)

    def resolve_one(self, key: str) -> dict[str, Any]:
        return {key: self.stages[key]}


def _resolver(root: Path):
    """DVC's resolver of ``root``/dvc.yaml (interpolating params.yaml), cached per content of both files; with
    ``BIASLAB_STAGES`` set, the resolution :func:`freeze` wrote to that file instead."""
    root = Path(root).resolve()
    stamp = _stamp(root)
    key = (str(root), stamp)
    if key not in _RESOLVERS and os.environ.get(FROZEN_ENV):
        path = Path(os.environ[FROZEN_ENV])
        try:
            frozen = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as err:
            raise StageError(f"{FROZEN_ENV}={path}: not a stages file ({err})") from None
        if frozen.get("stamp") != stamp:
            raise StageError(f"{FROZEN_ENV}={path} was resolved from another dvc.yaml or params.yaml than {root}'s: "
                             "write it again where DVC is installed (biaslab.stages.freeze)")
        _RESOLVERS.clear()
        _RESOLVERS[key] = _Frozen(frozen["keys"], frozen["stages"], frozen["upstream"])
    if key not in _RESOLVERS:
        from dvc.dvcfile import load_file
        from dvc.exceptions import DvcException
        from dvc.repo import Repo

        if not (root / "dvc.yaml").is_file():
            raise StageError(f"{root}: no dvc.yaml")
        try:
            repo = Repo(str(root), uninitialized=True)
            _RESOLVERS.clear()
            _RESOLVERS[key] = load_file(repo, str(root / "dvc.yaml")).resolver
        except DvcException as err:
            raise StageError(f"{root / 'dvc.yaml'}: DVC cannot read it: {err}") from None
    return _RESOLVERS[key]


def freeze(path: str | os.PathLike, root: Path | None = None) -> Path:
    """Write every stage as DVC resolves it (``name@member`` -> body) and DVC's graph (:func:`upstream`), with the
    stamp of dvc.yaml and params.yaml, for :func:`_resolver` on a machine without DVC (``BIASLAB_STAGES=path``).
    Returns ``path``."""
    from .io import write_json

    root = Path(root or repo_root()).resolve()
    resolver = _resolver(root)
    stages = {k: resolver.resolve_one(k)[k] for k in resolver.get_keys()}
    return write_json(Path(path), {"stamp": _stamp(root), "keys": list(stages),  # dvc.yaml order (the JSON is sorted)
                                   "stages": json.loads(json.dumps(stages, default=str)),
                                   "upstream": {k: sorted(v) for k, v in upstream(root).items()}})


def upstream(root: Path | None = None) -> dict[str, set[str]]:
    """Each stage's direct upstream stages, from DVC's own graph (or the :func:`freeze` file), in dvc.yaml order."""
    root = Path(root or repo_root()).resolve()
    resolver = _resolver(root)
    if isinstance(resolver, _Frozen):
        return {k: set(resolver.upstream[k]) for k in resolver.keys}
    from dvc.repo import Repo

    with Repo(str(root), uninitialized=True) as repo:
        graph = repo.index.graph
        # stage names as dvc.yaml writes them (``addressing`` is relative to the working directory)
        named = {n: n.name for n in graph.nodes if getattr(n, "cmd", None) and getattr(n, "name", None)}
        edges = {named[n]: {named[d] for d in graph.successors(n) if d in named} for n in named}
    return {s: edges[s] for s in all_stages(root) if s in edges}


def pipeline_order(root: Path | None = None) -> list[str]:
    """Every stage after its :func:`upstream` stages, in dvc.yaml order where the graph leaves a choice (a paper's
    chain before the next paper's, unlike :func:`biaslab.sweep.plan`'s waves): the order that runs the whole
    pipeline without DVC."""
    graph = upstream(root)
    keys = list(graph)
    order: list[str] = []
    while len(order) < len(keys):
        ready = next((k for k in keys if k not in order and graph[k] <= set(order)), None)
        if ready is None:
            raise StageError(f"dvc.yaml: a cycle among {sorted(set(keys) - set(order))}")
        order.append(ready)
    return order


def run_concurrently(plan: list[str], needs: dict[str, set[str]], run: Callable[[str], dict[str, Any]], *,
                     jobs: int, budget_s: float = 0, on_record: Callable[[list[dict]], None] | None = None,
                     group: Callable[[str], str] | None = None) -> list[dict[str, Any]]:
    """Run the stages of ``plan`` without DVC, at most ``jobs`` at a time, each once every stage it ``needs`` (those
    of ``plan``; others are taken as built) has succeeded. ``run(stage)`` runs one and returns its record, whose
    ``status`` is "ok" when it succeeded. A stage whose needs failed or did not run is not run, and none starts
    once ``budget_s`` seconds (0: no limit) have passed since the first. Among ready stages those of the earliest
    ``group`` in ``plan`` (e.g. the paper: a budget that stops the run then leaves whole papers, not a part of each)
    start first, then the one more stages wait on (transitively), then ``plan`` order: a paper's data stage before
    another paper's grid.

    Returns one record per stage, ``plan`` order: its ``stage``, ``status``, and for those run ``start_s`` /
    ``end_s`` (seconds after the first start) with what ``run`` returned. ``on_record`` gets the records so far
    after each stage ends (to write a partial result a killed run still leaves). Stages share nothing but their
    files, as under ``dvc repro``, so running them side by side changes no output given the same CPU threads a
    stage (fewer threads sum a CPU's floats in another order)."""
    import time
    from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
    from graphlib import TopologicalSorter

    within = {s: {n for n in needs.get(s, ()) if n in plan} for s in plan}
    waiting: dict[str, set[str]] = {s: set() for s in plan}  # stages that need s, transitively
    for s in reversed(list(TopologicalSorter(within).static_order())):
        for n in within[s]:
            waiting[n] |= {s} | waiting[s]
    groups = list(dict.fromkeys(map(group, plan))) if group else []
    rank = {s: (groups.index(group(s)) if group else 0, -len(waiting[s]), i) for i, s in enumerate(plan)}
    graph = TopologicalSorter(within)
    graph.prepare()
    records: dict[str, dict[str, Any]] = {}
    ready: list[str] = []
    start = time.perf_counter()

    def timed(stage: str) -> dict[str, Any]:
        began = time.perf_counter() - start
        record = run(stage)
        return {"stage": stage, **record, "start_s": round(began, 2), "end_s": round(time.perf_counter() - start, 2)}

    def finish(stage: str, record: dict[str, Any]) -> None:
        records[stage] = record
        graph.done(stage)
        if on_record is not None:
            on_record([records[s] for s in plan if s in records])

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        running: dict[Any, str] = {}
        while graph.is_active():
            ready = sorted({*ready, *graph.get_ready()}, key=rank.__getitem__)
            for stage in list(ready):
                blocked = sorted(n for n in within[stage] if records[n]["status"] != "ok")
                late = budget_s and time.perf_counter() - start > budget_s
                if blocked or late:
                    ready.remove(stage)
                    why = f"needs {', '.join(blocked)}" if blocked else f"past the budget of {budget_s:g} s"
                    finish(stage, {"stage": stage, "status": f"not run: {why}"})
                elif len(running) < max(1, jobs):
                    ready.remove(stage)
                    running[pool.submit(timed, stage)] = stage
            if not running:
                continue  # stages just marked not run may have freed others
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in done:
                finish(running.pop(future), future.result())
    return [records[s] for s in plan]


def carry_over(records: list[dict[str, Any]], earlier: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """:func:`run_concurrently`'s ``records`` with each stage this run did not run (left out, or after one left
    out: a status "not run: ...") given ``earlier``'s record of it where that run ran it: a profile too large for
    one call, run in parts (scripts/device_check.sh's STAGES). The caller checks both ran the same parameters."""
    ran = {r["stage"]: r for r in earlier if not r["status"].startswith("not run")}
    return [ran.get(r["stage"], r) if r["status"].startswith("not run") else r for r in records]


def all_stages(root: Path | None = None) -> list[str]:
    """Every stage DVC knows, foreach members as ``name@member``, in dvc.yaml order."""
    return list(_resolver(root or repo_root()).get_keys())


def listing(root: Path | None = None) -> str:
    """The stages of the project's dvc.yaml as ``biaslab run --help`` lists them (foreach stages with their
    members); a line saying why when DVC cannot read it."""
    try:
        names = all_stages(root)
    except Exception as err:  # outside a project, or a dvc.yaml DVC cannot read
        return f"stages: cannot list them here ({err})"
    groups: dict[str, list[str]] = {}
    for name in names:
        stage, _, member = name.partition("@")
        groups.setdefault(stage, []).extend([member] if member else [])
    lines = [f"  {g}" + (f"@{{{','.join(m)}}}" if m else "") for g, m in groups.items()]
    return "stages (dvc.yaml):\n" + "\n".join(lines)


def did_you_mean(name: str, choices: Iterable[str]) -> str:
    """`` (did you mean 'X'?)`` for the closest of ``choices`` (a typo of a stage, key or model), or nothing."""
    import difflib

    close = difflib.get_close_matches(name, list(choices), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def stage_members(stage: str, root: Path | None = None) -> list[str]:
    """``[stage]`` for a plain stage, ``[stage@m1, stage@m2, ...]`` for a foreach stage."""
    keys = all_stages(root)
    if stage in keys:
        return [stage]
    members = [k for k in keys if k.startswith(stage + "@")]
    if not members:
        names = sorted({k.split("@")[0] for k in keys})
        raise StageError(f"dvc.yaml has no stage {stage!r}{did_you_mean(stage, names)}; stages are: "
                         f"{', '.join(names) or '(none)'}")
    return members


def resolve(stage: str, root: Path | None = None) -> dict[str, Any]:
    """The stage's body as DVC resolves it (``cmd``, ``deps``, ``params``, ``outs``, ...)."""
    try:
        from dvc.exceptions import DvcException
    except ImportError:  # a machine without DVC, reading a frozen resolution
        DvcException = StageError

    keys = all_stages(root)
    if stage not in keys:
        name, _, member = stage.partition("@")
        members = [k.partition("@")[2] for k in keys if k.startswith(name + "@")]
        if members and not member:
            raise StageError(f"stage {name!r} runs per member: name one, e.g. {name}@{members[0]}")
        if members:
            raise StageError(f"stage {name!r} has no member {member!r}{did_you_mean(member, members)} "
                             f"(members: {members})")
        stage_members(name, root)  # raises: no such stage
    try:
        return _resolver(root or repo_root()).resolve_one(stage)[stage]
    except DvcException as err:
        raise StageError(f"dvc.yaml: stage {stage!r}: {err}") from None


def params_keys(spec: dict[str, Any]) -> list[str]:
    """The params.yaml keys a resolved stage declares (strings, or ``{params.yaml: [...]}`` entries)."""
    keys: list[str] = []
    for entry in spec.get("params", []) or []:
        if isinstance(entry, str):
            keys.append(entry)
        elif isinstance(entry, dict):
            for file, sub in entry.items():
                if Path(file).name != "params.yaml":
                    raise StageError(f"only params.yaml is supported as a params file, got {file}")
                keys.extend(sub or [])
    return keys


def stage_params(stage: str, root: Path | None = None) -> list[str]:
    return params_keys(resolve(stage, root))


def _paths(entries: list[Any]) -> list[str]:
    return [str(next(iter(e)) if isinstance(e, dict) else e) for e in entries or []]


def deps(stage: str, root: Path | None = None) -> list[str]:
    return _paths(resolve(stage, root).get("deps", []))


def outs(stage: str, root: Path | None = None) -> list[str]:
    spec = resolve(stage, root)
    return [p for kind in ("outs", "metrics", "plots") for p in _paths(spec.get(kind, []))]


def stage_notebook(stage: str, root: Path | None = None) -> Path:
    nb = next((p for p in deps(stage, root) if p.startswith("notebooks/") and p.endswith(".py")), None)
    if nb is None:
        raise StageError(f"stage {stage!r} lists no notebooks/*.py dependency in dvc.yaml")
    return (root or repo_root()) / nb


def stage_executed_notebook(stage: str, root: Path | None = None) -> Path:
    out = next((p for p in outs(stage, root) if p.endswith(".ipynb")), None)
    if out is None:
        raise StageError(f"stage {stage!r} lists no executed .ipynb among its outs in dvc.yaml")
    return (root or repo_root()) / out


def producer(path: str | Path, root: Path | None = None) -> str | None:
    """The stage whose outputs hold ``path`` (relative to the root: an output itself or a file in an output folder),
    or None when no stage writes it."""
    rel = Path(path).as_posix()
    for stage in all_stages(root):
        if any(rel == o or rel.startswith(o.rstrip("/") + "/") for o in outs(stage, root)):
            return stage
    return None


def made_by(root: Path | None = None, under: str = "reports") -> dict[str, str]:
    """Each stage output under ``under`` -> the executed notebook of the stage that writes it, both relative to
    ``under`` (a folder output covers the files inside it): where the report links every table and figure."""
    out: dict[str, str] = {}
    prefix = under.rstrip("/") + "/"
    for stage in all_stages(root):
        written = outs(stage, root)
        nb = next((p for p in written if p.endswith(".ipynb")), None)
        if nb is None or not nb.startswith(prefix):
            continue
        for o in written:
            if o.startswith(prefix) and o != nb:
                out[o[len(prefix):]] = nb[len(prefix):]
    return out


def stage_sets(stage: str, root: Path | None = None) -> dict[str, str]:
    """The ``--set name=value`` overrides written in the stage's ``cmd`` (e.g. a foreach member's ``run``), so
    that ``python -m biaslab.run name@member`` runs exactly what ``dvc repro name@member`` runs."""
    cmd = resolve(stage, root).get("cmd", "")
    tokens = shlex.split(" ".join(cmd) if isinstance(cmd, list) else str(cmd))
    out: dict[str, str] = {}
    for flag, value in pairwise(tokens):
        if flag == "--set" and "=" in value:
            name, _, val = value.partition("=")
            out[name.strip()] = val
    return out


def build_missing(paths, what: str, build: bool) -> None:
    """Make the missing ones among ``paths`` by running, with ``dvc repro`` (upstream included), the stages of
    dvc.yaml that write them, one progress step per stage; with ``build`` false, fail naming the command instead."""
    import subprocess
    import sys

    from tqdm.auto import tqdm

    root = repo_root()
    missing = [Path(p) for p in (paths.values() if isinstance(paths, dict) else paths) if not Path(p).exists()]
    if not missing:
        return
    targets = []
    for p in missing:
        stage = producer(Path(p).resolve().relative_to(root.resolve()), root)
        if stage is None:
            raise StageError(f"{p} not found, and no stage of dvc.yaml writes it")
        targets.append(stage)
    targets = list(dict.fromkeys(targets))
    command = f"dvc repro {' '.join(targets)}"
    if not build:
        raise FileNotFoundError(f"{what} needs {', '.join(map(str, missing))}: build it with `{command}`")
    print(f"biaslab: {what} needs inputs that are not built yet; running `{command}` (with the stages upstream "
          "of them that are not current)", file=sys.stderr)
    dvc = Path(sys.executable).parent / "dvc"
    for stage in tqdm(targets, desc="building inputs", unit="stage"):
        proc = subprocess.run([str(dvc) if dvc.exists() else "dvc", "repro", stage], cwd=root)
        if proc.returncode != 0:
            raise RuntimeError(f"`dvc repro {stage}` failed (exit {proc.returncode}); its output is above")
