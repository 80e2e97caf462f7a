"""Paper-scale grids on a scheduler: the pipeline's own stages, members fanned out as jobs.

A grid in this project is a ``foreach`` stage of ``dvc.yaml`` (``cscl_train@{seed}``, ``fairrank_train@{seed}``,
``intersect_train@{run}``, ``ragfair_train@{run}``, ``ragcontrol_train@{run}``, ...): ``configs/paper-scale.yaml``
(or ``configs/ragfair-app61-grid.yaml``) widens the grid in params.yaml, DVC resolves its members. ``biaslab sweep``
runs such a pipeline with the members of the named stages as jobs of an existing scheduler, through submitit:

* ``--executor slurm``: one SLURM job per member (submitit job arrays, ``slurm_array_parallelism``), with the
  resources the sweep file gives each stage;
* ``--executor local``: the same jobs as processes on this machine (submitit's LocalExecutor), at most ``--jobs``
  at a time;
* ``--executor debug``: the jobs one after another inside this process (submitit's DebugExecutor; breakpoints work).

Nothing in a member's job differs from ``dvc repro``: the job runs the member's ``cmd`` exactly as DVC resolves it
(``python -m biaslab.run name@member --set ...``) in the repository, so every value still comes from params.yaml.
The driver, on the login node or this machine, walks DVC's stage graph upstream from ``targets`` in waves: stages
that are not fanned out run through ``dvc repro --single-item`` in the driver (data preparation, the analyses
that collect the members, the report); the fanned-out members of a wave that DVC calls stale (all of them with
``force``) are submitted together and waited for, and those that succeeded are recorded with ``dvc commit``, so
DVC's lock holds their dependency and output hashes exactly as if ``dvc repro`` had run them, and the collecting
stages downstream see them as current inputs. Results land in the tables the default pipeline writes.

Why not ``dvc exp run --queue``: DVC's queue runs each *experiment* (a whole pipeline with its own params) in a
separate copy of the repository; it parallelises variants of params.yaml (compare them with ``dvc exp show``),
not the members of one foreach grid, whose outputs must meet in one workspace for the analysis stage. The README
shows both: the queue for params variants, this command for a grid.

Job states on SLURM: submitit polls ``sacct``, which needs the cluster's accounting store; on a cluster without one
(``AccountingStorageType=accounting_storage/none``) every poll fails with a warning and a cancelled or timed-out
job is only noticed by its missing result. There the sweep reads states with ``squeue --states=all`` instead
(:class:`SqueueWatcher`): finished jobs stay listed for ``MinJobAge`` (300 s by default), and it polls at least
every minute.

Every event (a member submitted with its job id, done, failed with its state and log) is appended to
``<folder>/sweep.log`` as well as printed. A failed member is reported with its job id, the scheduler's state, its
log and the command that reruns what is missing; members that succeeded are committed, a failed one leaves DVC's
lock as it was (the runner writes outputs by temp file and rename: a killed job leaves no half-written output), and
rerunning the sweep submits only the members DVC calls stale.

Concurrency: members write disjoint outputs (DVC refuses overlapping outputs), and the shared caches (embedding
store, model conversions) are written by temp-file-and-rename, so concurrent members do not corrupt each other;
each job needs the repository, the data mirror and the cache on a filesystem every node sees.
"""

from __future__ import annotations

import datetime
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import submitit
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from . import stages as stage_decl
from .paths import repo_root

EXECUTORS = ("local", "debug", "slurm")


class SweepError(RuntimeError):
    """A member's job failed (or DVC did, in the driver)."""


class SweepConfigError(SweepError):
    """A sweep file is invalid, names a stage that does not exist, or asks for an unknown executor: nothing ran."""


class Resources(BaseModel):
    """What one member's job asks the scheduler for (submitit's generic parameters)."""

    model_config = ConfigDict(extra="forbid")
    timeout_min: int = Field(gt=0)
    cpus_per_task: int = Field(gt=0)
    mem_gb: float = Field(gt=0)
    gpus_per_node: int = Field(ge=0)


class SweepConfig(BaseModel):
    """A sweep file (``configs/sweeps/*.yaml``): execution only — no value that changes a result lives here."""

    model_config = ConfigDict(extra="forbid")
    targets: list[str] = Field(min_length=1)
    fan_out: dict[str, Resources] = Field(min_length=1)
    slurm: dict[str, Any] = Field(default_factory=dict)  # extra slurm_* settings: partition, account, qos, ...


def load_config(path: str | os.PathLike) -> SweepConfig:
    import yaml

    path = Path(path)
    if not path.is_file():
        raise SweepConfigError(f"{path}: no such sweep file (see configs/sweeps/)")
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        return SweepConfig.model_validate(raw)
    except (yaml.YAMLError, ValidationError) as err:
        raise SweepConfigError(f"{path}: invalid sweep file:\n{err}") from None


@dataclass
class Wave:
    """Stages whose upstream is complete: ``local`` run in the driver, ``jobs`` (fanned-out members) submitted."""

    local: list[str] = field(default_factory=list)
    jobs: list[str] = field(default_factory=list)


def plan(upstream: dict[str, set[str]], targets: Iterable[str], fan_out: Iterable[str]) -> list[Wave]:
    """Waves over ``targets`` and everything upstream of them, given each stage's direct upstream stages.

    A stage enters the first wave after all of its upstream stages; ``fan_out`` names stages or foreach groups
    (``cscl_train`` covers ``cscl_train@0``, ...) whose members become jobs. Within a wave, order is dvc.yaml's
    (the mapping's) order.
    """
    groups = set(fan_out)
    stack = list(targets)
    seen: set[str] = set()
    while stack:
        s = stack.pop()
        if s in seen:
            continue
        if s not in upstream:
            raise SweepConfigError(f"no stage {s!r} in dvc.yaml")
        seen.add(s)
        stack.extend(upstream[s])
    todo = [s for s in upstream if s in seen]
    waves, done = [], set()
    while todo:
        ready = [s for s in todo if upstream[s] <= done]
        if not ready:  # DVC forbids cycles; this guards a malformed mapping
            raise SweepError(f"cycle among stages {todo}")
        wave = Wave()
        for s in ready:
            (wave.jobs if s.partition("@")[0] in groups or s in groups else wave.local).append(s)
        waves.append(wave)
        done.update(ready)
        todo = [s for s in todo if s not in done]
    return waves


def run_member(root: str, stage: str, cmd: str) -> dict[str, Any]:
    """The job: a member's ``cmd`` in the repository, as ``dvc repro`` would run it. Runs on the executor's side."""
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    start = time.perf_counter()
    proc = subprocess.run(cmd, shell=True, cwd=root, env=env)
    seconds = round(time.perf_counter() - start, 1)
    if proc.returncode != 0:
        # a signal shows as -N when the shell exec'd the command, or as the shell's own status 128+N when it did not
        killed = -proc.returncode if proc.returncode < 0 else proc.returncode - 128
        how = (f"was killed by {signal.Signals(killed).name}" if killed in signal.valid_signals()
               else f"exited with {proc.returncode}")
        raise SweepError(f"{stage}: `{cmd}` {how} after {seconds} s")
    return {"stage": stage, "seconds": seconds}


def _dvc(root: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    exe = Path(sys.executable).parent / "dvc"
    proc = subprocess.run([str(exe) if exe.exists() else "dvc", *args], cwd=root, capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise SweepError(f"dvc {' '.join(args)} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    return proc


def stale(root: Path, members: list[str]) -> list[str]:
    """The members DVC would rerun (``dvc status`` of each alone; its upstream is complete when this is asked)."""
    if not members:
        return []
    out = json.loads(_dvc(root, "status", "--json", *members).stdout or "{}")
    return [m for m in members if m in out]


class SqueueWatcher(submitit.slurm.slurm.SlurmInfoWatcher):
    """submitit's SLURM job watcher, reading states from ``squeue`` rather than ``sacct`` (module doc)."""

    def _make_command(self) -> list[str] | None:
        ids = sorted({x.split("_")[0] for x in self._registered - self._finished})
        if not ids:
            return None
        return ["squeue", "--all", "--array", "--states=all", "--format=%i|%T|%N", "--jobs", ",".join(ids)]

    def read_info(self, string: bytes | str) -> dict[str, dict[str, str]]:
        lines = (string.decode() if isinstance(string, bytes) else string).splitlines()
        # squeue's header is JOBID|STATE|NODELIST; submitit's parser reads sacct's column names
        return super().read_info("\n".join(["JobID|State|NodeList", *lines[1:]])) if lines else {}


SQUEUE = SqueueWatcher(delay_s=60)  # polls at least every minute, below MinJobAge: no finished job is missed


def slurm_has_accounting() -> bool:
    """Whether ``sacct`` can answer on this cluster (an accounting store is configured)."""
    proc = subprocess.run(["scontrol", "show", "config"], capture_output=True, text=True)
    if proc.returncode != 0:
        raise SweepError(f"scontrol show config failed ({proc.stderr.strip() or proc.returncode}): is SLURM_CONF "
                         "set and slurmctld reachable from here?")
    return "accounting_storage/none" not in proc.stdout


def _executor(kind: str, folder: Path, resources: Resources, name: str, jobs: int, slurm: dict[str, Any]):
    if kind != "slurm":
        ex = submitit.AutoExecutor(folder=folder / name, cluster=kind)
        ex.update_parameters(name=name, timeout_min=resources.timeout_min, cpus_per_task=resources.cpus_per_task,
                             mem_gb=resources.mem_gb, gpus_per_node=resources.gpus_per_node)
        return ex
    ex = submitit.SlurmExecutor(folder=folder / name)
    extra = {k.removeprefix("slurm_"): v for k, v in slurm.items()}
    extra.setdefault("array_parallelism", jobs)
    # submitit signals a job 90 s before its limit so that a checkpointable job can requeue itself; a member cannot
    # resume (a notebook run is all or nothing), so that signal would only end it 90 s early. At 0, SLURM's own
    # time limit ends it (state TIMEOUT). A sweep file's `slurm: {signal_delay_s: ...}` overrides this.
    extra.setdefault("signal_delay_s", 0)
    gpus = {"gpus_per_node": resources.gpus_per_node} if resources.gpus_per_node else {}
    ex.update_parameters(job_name=name, time=resources.timeout_min, cpus_per_task=resources.cpus_per_task,
                         mem=_mem(resources.mem_gb), **gpus, **extra)
    return ex


def _mem(gb: float) -> str:
    return f"{int(gb)}GB" if gb == int(gb) else f"{round(gb * 1024)}MB"


class _Log:
    """Print and append to ``<folder>/sweep.log`` (timestamped), so job ids outlive the terminal."""

    def __init__(self, folder: Path, echo: Callable[[str], None]):
        self.path, self.echo = folder / "sweep.log", echo

    def __call__(self, line: str) -> None:
        self.echo(line)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as f:
            f.write(f"{datetime.datetime.now().isoformat(timespec='seconds')} {line}\n")


@dataclass
class Result:
    stage: str
    how: Literal["job", "local", "current"]
    seconds: float | None = None
    job_id: str | None = None
    error: str | None = None
    state: str | None = None  # the scheduler's state of a failed job (CANCELLED, TIMEOUT, FAILED, ...)
    log: str | None = None  # the failed job's error log


def sweep(config: SweepConfig, executor: str = "local", *, root: Path | None = None, jobs: int = 2,
          force: bool = False, dry_run: bool = False, folder: Path | None = None,
          echo: Callable[[str], None] = print, rerun: str | None = None) -> list[Result]:
    """Run ``config.targets`` and their upstream, ``config.fan_out`` members as ``executor`` jobs (module doc).

    ``force`` reruns every fanned-out member even when DVC calls it current; the driver's stages follow DVC's own
    staleness. ``jobs`` caps concurrent jobs (local: processes at a time; slurm: the array's parallelism).
    ``folder`` holds submitit's logs and ``sweep.log`` (default ``.sweeps/`` in the repository, ignored by git and
    DVC). ``rerun`` is the command a failure message tells the user to run again (the CLI passes its own).
    """
    if executor not in EXECUTORS:
        raise SweepConfigError(f"executor {executor!r}: choose one of {', '.join(EXECUTORS)}")
    if jobs < 1:
        raise SweepConfigError(f"--jobs must be at least 1, got {jobs}")
    root = Path(root or repo_root()).resolve()
    graph = stage_decl.upstream(root)
    for name in config.fan_out:
        if name not in graph and not any(s.startswith(name + "@") for s in graph):
            raise SweepConfigError(f"fan_out names {name!r}, which is no stage of dvc.yaml")
    waves = plan(graph, config.targets, config.fan_out)
    folder = Path(folder or root / ".sweeps").resolve()
    if not dry_run:
        echo = _Log(folder, echo)
        echo(f"sweep of {', '.join(config.targets)} with {executor} jobs (fan_out: {', '.join(config.fan_out)})")
    results: list[Result] = []
    for i, wave in enumerate(waves, 1):
        echo(f"wave {i}/{len(waves)}: {len(wave.local)} in the driver, {len(wave.jobs)} fanned out")
        if dry_run:
            results += [Result(s, "local") for s in wave.local] + [Result(s, "job") for s in wave.jobs]
            continue
        for s in wave.local:
            t0 = time.perf_counter()
            out = _dvc(root, "repro", "--single-item", s).stdout
            ran = "Running stage" in out
            results.append(Result(s, "local" if ran else "current", round(time.perf_counter() - t0, 1) if ran else None))
        todo = list(wave.jobs) if force else stale(root, wave.jobs)
        results += [Result(s, "current") for s in wave.jobs if s not in todo]
        if not todo:
            continue
        done, failed = _submit(root, todo, config, executor, folder, jobs, echo)
        if done:
            _dvc(root, "commit", "--force", *[r.stage for r in done])
        results += done + failed
        if failed:
            lines = "\n".join(f"  {r.stage}: job {r.job_id} {r.state or 'FAILED'}: {r.error}\n    log: {r.log}"
                              for r in failed)
            again = rerun or "the same `biaslab sweep` command"
            raise SweepError(f"{len(failed)} of {len(todo)} jobs failed; the {len(done)} that succeeded are "
                             f"committed, the failed ones left no output in DVC's lock:\n{lines}\n"
                             f"rerun {again} to submit only what is missing (one member alone: "
                             f"`dvc repro --single-item {failed[0].stage}`)")
    return results


def _submit(root: Path, members: list[str], config: SweepConfig, executor: str, folder: Path, jobs: int,
            echo: Callable[[str], None]) -> tuple[list[Result], list[Result]]:
    """Submit ``members`` grouped by stage (one job array per group), wait, and split successes from failures."""
    from tqdm.auto import tqdm

    by_group: dict[str, list[str]] = {}
    for m in members:
        by_group.setdefault(m if m in config.fan_out else m.partition("@")[0], []).append(m)
    done: list[Result] = []
    failed: list[Result] = []
    squeue = executor == "slurm" and not slurm_has_accounting()
    for group, items in by_group.items():
        ex = _executor(executor, folder, config.fan_out[group], group, jobs, config.slurm)
        cmds = [stage_decl.resolve(m, root)["cmd"] for m in items]
        cmds = [" ".join(c) if isinstance(c, list) else str(c) for c in cmds]
        # local processes start at once when submitted: cap them at `jobs` by submitting in slices
        step = jobs if executor == "local" else len(items)
        for lo in range(0, len(items), step):
            batch = items[lo:lo + step]
            with ex.batch():
                handles = [ex.submit(run_member, str(root), m, c) for m, c in zip(batch, cmds[lo:lo + step], strict=True)]
            if squeue:
                for h in handles:  # submitit builds array jobs as plain SlurmJob: their watcher is swapped here
                    h.watcher = SQUEUE
                    SQUEUE.register_job(h.job_id)
            echo(f"{group}: submitted {', '.join(f'{m} (job {h.job_id})' for m, h in zip(batch, handles, strict=True))}")
            for m, h in tqdm(list(zip(batch, handles, strict=True)), desc=group, unit="job"):
                try:
                    out = h.result()
                    done.append(Result(m, "job", out["seconds"], str(h.job_id)))
                    echo(f"{m}: job {h.job_id} done in {out['seconds']} s")
                except Exception as err:  # the job's own exception, re-raised by submitit with its traceback
                    failed.append(r := Result(m, "job", None, str(h.job_id), _reason(err), _state(h),
                                              str(h.paths.stderr)))
                    echo(f"{m}: job {r.job_id} {r.state or 'FAILED'}: {r.error} (log: {r.log})")
    return done, failed


def _state(job, settle_s: float = 30) -> str | None:
    """The scheduler's final state of a job whose result came back as a failure (waits while it is COMPLETING)."""
    deadline = time.monotonic() + settle_s
    while True:
        try:
            state = job.watcher.get_state(job.job_id, mode="force").split()[0]  # "CANCELLED by 0" -> "CANCELLED"
        except Exception:  # a scheduler that cannot tell (local processes) or is unreachable
            return None
        if state not in ("COMPLETING", "RUNNING", "PENDING") or time.monotonic() > deadline:
            return None if state == "UNKNOWN" else state
        time.sleep(1)


def _reason(err: Exception) -> str:
    """One line: the job's own error (its last line), or that the scheduler ended it without a result."""
    text = str(err).strip()
    ended = re.search(r"has not produced any output \(state: ([^)]*)\)", text)
    if ended:
        return f"ended by the scheduler without a result ({ended.group(1)})"
    if isinstance(err, submitit.core.utils.FailedJobError):  # "... with trace:\n-----\n<traceback>\n-----\n<log paths>"
        trace = [line.strip() for line in ([*re.split(r"^-{10,}$", text, flags=re.M), "", ""])[1].splitlines()]
        last = next((line for line in reversed(trace) if line), "")
        return re.sub(r"^(?:\w+\.)+(\w+:)", r"\1", last)  # "biaslab.sweep.SweepError: ..." -> "SweepError: ..."
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return f"{type(err).__name__}: {lines[-1] if lines else ''}"


def summary(results: list[Result]) -> str:
    """A Markdown table of what ran where."""
    rows = ["| stage | ran | seconds | job |", "|---|---|---:|---|"]
    rows += [f"| {r.stage} | {r.how if not r.error else 'failed'} | {'' if r.seconds is None else r.seconds} | "
             f"{r.job_id or ''} |" for r in results]
    return "\n".join(rows)
