"""biaslab sweep: waves over DVC's graph, grid members as submitit jobs, results committed to DVC's lock."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from biaslab import sweep

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
    graph = sweep.stage_graph(root)
    for path in sorted((root / "configs" / "sweeps").glob("*.yaml")):
        cfg = sweep.load_config(path)
        for name in cfg.fan_out:
            assert name in graph or any(s.startswith(name + "@") for s in graph), (path.name, name)
        sweep.plan(graph, cfg.targets, cfg.fan_out)


TOY = """
stages:
  base:
    cmd: python -c "open('base.txt', 'w').write('b')"
    outs: [base.txt]
  member:
    foreach: [1, 2, 3]
    do:
      cmd: python -c "import sys; t = open('base.txt').read() * ${item}; open('m${item}.txt', 'w').write(t); sys.exit(${item} == int(open('fail').read()) if __import__('os').path.exists('fail') else 0)"
      deps: [base.txt]
      outs: ["m${item}.txt"]
  collect:
    cmd: python -c "open('all.txt', 'w').write('+'.join(open(f'm{i}.txt').read() for i in (1, 2, 3)))"
    deps: [m1.txt, m2.txt, m3.txt]
    outs: [all.txt]
"""


@pytest.fixture
def toy(tmp_path, monkeypatch):
    """A DVC repository with a three-member grid and a stage that collects it."""
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv("BIASLAB_ROOT", raising=False)
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    subprocess.run([str(Path(sys.executable).parent / "dvc"), "init", "-q"], cwd=tmp_path, check=True)
    (tmp_path / "dvc.yaml").write_text(TOY)
    (tmp_path / ".dvcignore").write_text("fail\nsweeps/\n")
    cfg = sweep.SweepConfig.model_validate({"targets": ["collect"], "fan_out": {"member": {
        "timeout_min": 2, "cpus_per_task": 1, "mem_gb": 1, "gpus_per_node": 0}}})
    return tmp_path, cfg


def _status(root: Path) -> str:
    return subprocess.run([str(Path(sys.executable).parent / "dvc"), "status"], cwd=root, capture_output=True,
                          text=True, check=True).stdout


@pytest.mark.parametrize("executor", ["local", "debug"])
def test_a_sweep_runs_members_as_jobs_commits_them_and_reruns_only_what_is_stale(toy, executor):
    root, cfg = toy
    res = sweep.sweep(cfg, executor, root=root, jobs=2, folder=root / "sweeps", echo=lambda _: None)
    assert [(r.stage, r.how) for r in res] == [("base", "local"), ("member@1", "job"), ("member@2", "job"),
                                               ("member@3", "job"), ("collect", "local")]
    assert (root / "all.txt").read_text() == "b+bb+bbb"
    assert "up to date" in _status(root)  # the jobs' outputs are in DVC's lock: the pipeline is current
    if executor == "local":
        assert len(list((root / "sweeps" / "member").glob("*_log.out"))) == 3  # submitit's job logs
    again = sweep.sweep(cfg, executor, root=root, jobs=2, folder=root / "sweeps", echo=lambda _: None)
    assert {r.how for r in again} == {"current"}
    forced = sweep.sweep(cfg, executor, root=root, jobs=2, force=True, folder=root / "sweeps", echo=lambda _: None)
    assert [r.stage for r in forced if r.how == "job"] == ["member@1", "member@2", "member@3"]
    assert "up to date" in _status(root)  # same bytes: the collecting stage stays current


def test_a_failed_member_is_named_and_the_others_are_kept(toy):
    root, cfg = toy
    (root / "fail").write_text("2")
    with pytest.raises(sweep.SweepError, match=r"1 of 3 jobs failed(.|\n)*member@2"):
        sweep.sweep(cfg, "local", root=root, jobs=3, folder=root / "sweeps", echo=lambda _: None)
    status = _status(root)
    assert "member@2" in status and "member@1" not in status and "member@3" not in status
    (root / "fail").unlink()
    res = sweep.sweep(cfg, "local", root=root, jobs=3, folder=root / "sweeps", echo=lambda _: None)
    assert [r.stage for r in res if r.how == "job"] == ["member@2"]
    assert (root / "all.txt").read_text() == "b+bb+bbb"


def test_an_unknown_executor_or_fan_out_stage_fails_before_any_work(toy):
    root, cfg = toy
    with pytest.raises(sweep.SweepError, match="executor 'ray'"):
        sweep.sweep(cfg, "ray", root=root)
    bad = cfg.model_copy(update={"fan_out": {"trian": cfg.fan_out["member"]}})
    with pytest.raises(sweep.SweepError, match="'trian', which is no stage"):
        sweep.sweep(bad, "local", root=root)
    assert not (root / "base.txt").exists()
