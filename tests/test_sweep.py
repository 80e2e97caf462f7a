"""biaslab sweep: waves over DVC's graph, grid members as submitit jobs, results committed to DVC's lock."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from biaslab import stages, sweep

import dvc_grid

GRAPH = {  # stage -> direct upstream, in dvc.yaml order
    "fetch": set(),
    "data@a": {"fetch"},
    "data@b": {"fetch"},
    "train@0": {"data@a", "data@b"},
    "train@1": {"data@a", "data@b"},
    "analysis": {"train@0", "train@1"},
    "other": {"fetch"},
    "report": {"analysis"},
}


def test_plan_puts_members_of_fanned_out_groups_in_job_waves_after_their_upstream():
    waves = sweep.plan(GRAPH, ["report"], ["train"])
    assert [(w.local, w.jobs) for w in waves] == [
        (["fetch"], []), (["data@a", "data@b"], []), ([], ["train@0", "train@1"]), (["analysis"], []),
        (["report"], [])]
    assert "other" not in {s for w in waves for s in w.local + w.jobs}  # not upstream of the target


def test_plan_accepts_a_single_member_or_plain_stage_and_rejects_unknown_targets():
    waves = sweep.plan(GRAPH, ["analysis"], ["train@1", "data"])
    assert [(w.local, w.jobs) for w in waves] == [
        (["fetch"], []), ([], ["data@a", "data@b"]), (["train@0"], ["train@1"]), (["analysis"], [])]
    with pytest.raises(sweep.SweepError, match="no stage 'nope'"):
        sweep.plan(GRAPH, ["nope"], ["train"])


def test_a_sweep_file_is_validated_at_the_boundary(tmp_path):
    good = {"targets": ["report"], "fan_out": {"train": {"timeout_min": 5, "cpus_per_task": 1, "mem_gb": 1,
                                                         "gpus_per_node": 0}}}
    (tmp_path / "ok.yaml").write_text(yaml.safe_dump(good))
    assert sweep.load_config(tmp_path / "ok.yaml").fan_out["train"].timeout_min == 5
    bad = {**good, "fan_out": {"train": {**good["fan_out"]["train"], "gpus": 1}}}
    (tmp_path / "bad.yaml").write_text(yaml.safe_dump(bad))
    with pytest.raises(sweep.SweepError, match=r"bad.yaml: invalid sweep file(.|\n)*gpus"):
        sweep.load_config(tmp_path / "bad.yaml")
    with pytest.raises(sweep.SweepError, match="no such sweep file"):
        sweep.load_config(tmp_path / "missing.yaml")


def test_the_repository_sweep_files_name_real_stages():
    root = Path(__file__).resolve().parents[1]
    graph = stages.upstream(root)
    for path in sorted((root / "configs" / "sweeps").glob("*.yaml")):
        cfg = sweep.load_config(path)
        for name in cfg.fan_out:
            assert name in graph or any(s.startswith(name + "@") for s in graph), (path.name, name)
        sweep.plan(graph, cfg.targets, cfg.fan_out)


@pytest.fixture
def toy(tmp_path, monkeypatch):
    """A DVC repository with a three-member grid and a stage that collects it (tests/dvc_grid.py)."""
    cfg = sweep.SweepConfig.model_validate({"targets": ["collect"], "fan_out": {"member": {
        "timeout_min": 2, "cpus_per_task": 1, "mem_gb": 1, "gpus_per_node": 0}}})
    return dvc_grid.make(tmp_path, monkeypatch), cfg


@pytest.mark.slow
@pytest.mark.parametrize("executor", ["local", "debug"])
def test_a_sweep_runs_members_as_jobs_commits_them_and_reruns_only_what_is_stale(toy, executor):
    root, cfg = toy
    res = sweep.sweep(cfg, executor, root=root, jobs=2, folder=root / "sweeps", echo=lambda _: None)
    assert [(r.stage, r.how) for r in res] == [("base", "local"), ("member@1", "job"), ("member@2", "job"),
                                               ("member@3", "job"), ("collect", "local")]
    assert (root / "all.txt").read_text() == "b+bb+bbb"
    assert "up to date" in dvc_grid.status(root)  # the jobs' outputs are in DVC's lock: the pipeline is current
    if executor == "local":
        assert len(list((root / "sweeps" / "member").glob("*_log.out"))) == 3  # submitit's job logs
    again = sweep.sweep(cfg, executor, root=root, jobs=2, folder=root / "sweeps", echo=lambda _: None)
    assert {r.how for r in again} == {"current"}
    forced = sweep.sweep(cfg, executor, root=root, jobs=2, force=True, folder=root / "sweeps", echo=lambda _: None)
    assert [r.stage for r in forced if r.how == "job"] == ["member@1", "member@2", "member@3"]
    assert "up to date" in dvc_grid.status(root)  # same bytes: the collecting stage stays current


@pytest.mark.slow
def test_a_failed_member_is_named_and_the_others_are_kept(toy):
    root, cfg = toy
    (root / "fail").write_text("2")
    with pytest.raises(sweep.SweepError, match=r"1 of 3 jobs failed(.|\n)*member@2"):
        sweep.sweep(cfg, "local", root=root, jobs=3, folder=root / "sweeps", echo=lambda _: None)
    status = dvc_grid.status(root)
    assert "member@2" in status and "member@1" not in status and "member@3" not in status
    (root / "fail").unlink()
    res = sweep.sweep(cfg, "local", root=root, jobs=3, folder=root / "sweeps", echo=lambda _: None)
    assert [r.stage for r in res if r.how == "job"] == ["member@2"]
    assert (root / "all.txt").read_text() == "b+bb+bbb"


@pytest.mark.parametrize(("cmd", "how"), [
    ("exit 3", "exited with 3"),
    ("kill -TERM $$", "was killed by SIGTERM"),  # the shell itself: a negative return code
    ("sh -c 'kill -TERM $$'; exit $?", "was killed by SIGTERM"),  # a child the shell did not exec: status 143
])
def test_a_member_killed_by_a_signal_is_reported_as_one_however_the_shell_ran_it(tmp_path, cmd, how):
    with pytest.raises(sweep.SweepError, match=rf"member@1: `.*` {how} after"):
        sweep.run_member(str(tmp_path), "member@1", cmd)


def test_an_unknown_executor_or_fan_out_stage_fails_before_any_work(toy):
    root, cfg = toy
    with pytest.raises(sweep.SweepError, match="executor 'ray'"):
        sweep.sweep(cfg, "ray", root=root)
    bad = cfg.model_copy(update={"fan_out": {"trian": cfg.fan_out["member"]}})
    with pytest.raises(sweep.SweepError, match="'trian', which is no stage"):
        sweep.sweep(bad, "local", root=root)
    assert not (root / "base.txt").exists()


QUEUE_STAGE = """
stages:
  score:
    cmd: python score.py
    deps: [score.py]
    params: [score.scale]
    metrics: [{metrics.json: {cache: false}}]
"""
SCORE = "import json, yaml\nscale = yaml.safe_load(open('params.yaml'))['score']['scale']\n" \
        "json.dump({'value': scale * 2}, open('metrics.json', 'w'))\n"


@pytest.mark.slow
def test_params_variants_run_through_dvcs_own_queue(tmp_path, monkeypatch):
    """Variants of params.yaml go through DVC's queue (the README's rule: the queue for params variants,
    `biaslab sweep` for a grid's members): two queued experiments, two workers, both listed with their metrics."""
    root = tmp_path / "exp"
    root.mkdir()
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv("BIASLAB_ROOT", raising=False)
    for var, value in (("GIT_AUTHOR_NAME", "t"), ("GIT_AUTHOR_EMAIL", "t@t"), ("GIT_COMMITTER_NAME", "t"),
                       ("GIT_COMMITTER_EMAIL", "t@t")):
        monkeypatch.setenv(var, value)
    dvc = str(Path(sys.executable).parent / "dvc")

    def run(*args):
        proc = subprocess.run(args, cwd=root, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, f"{' '.join(args)}:\n{proc.stdout}\n{proc.stderr}"
        return proc.stdout

    run("git", "init", "-q")
    run(dvc, "init", "-q")
    (root / "dvc.yaml").write_text(QUEUE_STAGE)
    (root / "params.yaml").write_text("score:\n  scale: 1\n")
    (root / "score.py").write_text(SCORE)
    run(dvc, "repro")
    run("git", "add", "-A")
    run("git", "commit", "-qm", "baseline")
    run(dvc, "exp", "run", "--queue", "-S", "score.scale=3", "--name", "scale-3")
    run(dvc, "exp", "run", "--queue", "-S", "score.scale=5", "--name", "scale-5")
    # the workers it starts outlive it and keep its output open: a captured pipe would wait for them to finish
    with open(tmp_path / "queue-start.log", "w") as log:
        start = subprocess.run([dvc, "queue", "start", "-j", "2"], cwd=root, stdout=log, stderr=subprocess.STDOUT,
                               timeout=300)
    assert start.returncode == 0, (tmp_path / "queue-start.log").read_text()
    deadline = time.monotonic() + 240
    while "Queued" in (status := run(dvc, "queue", "status")) or "Running" in status:
        assert time.monotonic() < deadline, status
        time.sleep(2)
    assert status.count("Success") == 2, status
    shown = json.loads(run(dvc, "exp", "show", "--json"))
    found = {}
    for commit in shown:
        for exp in commit.get("experiments") or []:
            for rev in exp.get("revs", []):
                data = rev.get("data", {})
                scale = data.get("params", {}).get("params.yaml", {}).get("data", {}).get("score", {}).get("scale")
                value = data.get("metrics", {}).get("metrics.json", {}).get("data", {}).get("value")
                found[rev.get("name")] = (scale, value)
    assert found == {"scale-3": (3, 6), "scale-5": (5, 10)}, shown
    run(dvc, "queue", "stop")


def test_the_command_prints_what_ran_where_and_exits_2_for_an_invalid_sweep_file(toy, monkeypatch, capsys):
    from biaslab import cli

    root, cfg = toy
    monkeypatch.chdir(root)
    (root / "params.yaml").write_text("{}\n")  # a biaslab project: dvc.yaml and params.yaml
    (root / "sweep.yaml").write_text(yaml.safe_dump(cfg.model_dump()))
    assert cli.main(["sweep", "sweep.yaml", "--executor", "debug", "--folder", str(root / "sweeps")]) == 0
    out = capsys.readouterr().out
    assert "| member@2 | job |" in out and "| collect | local |" in out
    assert "member@2 (job " in (root / "sweeps" / "sweep.log").read_text()
    (root / "bad.yaml").write_text("targets: []\n")
    assert cli.main(["sweep", "bad.yaml", "--executor", "debug"]) == 2
    assert "invalid sweep file" in capsys.readouterr().err
