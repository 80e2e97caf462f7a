"""`biaslab sweep --executor slurm` against a real SLURM controller that the test starts (tests/slurm_cluster.py).

The real cscl grid goes through the same path in tests/test_integration.py; here a toy DVC grid, whose members can
be told to hang, shows the scheduler's side: job ids in the sweep's log, resources reaching sbatch, a member
cancelled with scancel and one past its time limit reported with job id, state, log and the rerun command, nothing
half written, and a rerun that submits only what is missing.
"""

from __future__ import annotations

import re
import subprocess
import threading
import time
from pathlib import Path

import pytest

from biaslab import sweep

import dvc_grid

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

def _grid(root: Path, monkeypatch) -> sweep.SweepConfig:
    dvc_grid.make(root, monkeypatch)
    return sweep.SweepConfig.model_validate({
        "targets": ["collect"], "slurm": {"partition": "debug"},
        "fan_out": {"member": {"timeout_min": 1, "cpus_per_task": 1, "mem_gb": 0.5, "gpus_per_node": 0}}})


def _job_ids(log: Path) -> dict[str, str]:
    """member -> job id, from the sweep's log (the last submission of each)."""
    return dict(re.findall(r"(member@\d) \(job (\d+_\d+)\)", log.read_text()))


def test_a_slurm_sweep_records_job_ids_passes_resources_and_matches_dvc_repro(slurm, tmp_path, monkeypatch, capfd):
    root = tmp_path / "grid"
    cfg = _grid(root, monkeypatch)
    res = sweep.sweep(cfg, "slurm", root=root, jobs=3, folder=root / "sweeps", echo=lambda _: None)
    assert [(r.stage, r.how) for r in res] == [("base", "local"), ("member@1", "job"), ("member@2", "job"),
                                               ("member@3", "job"), ("collect", "local")]
    assert "up to date" in dvc_grid.status(root)
    ids = _job_ids(root / "sweeps" / "sweep.log")
    assert sorted(ids) == ["member@1", "member@2", "member@3"] and {r.job_id for r in res if r.job_id} == set(ids.values())
    for member, job_id in ids.items():
        job = slurm.job(job_id)  # what sbatch gave the scheduler: the sweep file's resources
        assert (job["JobState"], job["TimeLimit"], job["NumCPUs"], job["MinMemoryNode"], job["Partition"]) == (
            "COMPLETED", "00:01:00", "1", "512M", "debug"), (member, job)
        assert f"member {member[-1]} on " in (root / "sweeps" / "member" / f"{job_id}_0_log.out").read_text()
    swept = {p: (root / p).read_bytes() for p in ("m1.txt", "m2.txt", "m3.txt", "all.txt")}
    subprocess.run([dvc_grid.DVC, "repro", "--force"], cwd=root, check=True, capture_output=True)  # the plain way
    assert {p: (root / p).read_bytes() for p in swept} == swept
    assert "Bypassing sacct error" not in capfd.readouterr().err  # states came from squeue, without warnings


def test_cancelled_and_timed_out_members_are_reported_and_a_rerun_submits_only_them(slurm, tmp_path, monkeypatch):
    root = tmp_path / "grid"
    cfg = _grid(root, monkeypatch)
    (root / "hang2").touch()
    (root / "hang3").touch()
    log = root / "sweeps" / "sweep.log"
    outcome: dict = {}

    def run():
        try:
            sweep.sweep(cfg, "slurm", root=root, jobs=3, folder=root / "sweeps", echo=lambda _: None,
                        rerun="`biaslab sweep grid.yaml --executor slurm`")
        except sweep.SweepError as err:
            outcome["error"] = str(err)

    driver = threading.Thread(target=run)
    driver.start()
    deadline = time.monotonic() + 60
    while "member@2" not in (_job_ids(log) if log.exists() else {}):
        assert time.monotonic() < deadline, "member@2 was never submitted"
        time.sleep(0.5)
    ids = _job_ids(log)
    slurm.wait_for(ids["member@2"], {"RUNNING"})
    slurm.run("scancel", ids["member@2"])
    driver.join(timeout=240)  # member@3 runs into its 1-minute limit; SLURM enforces it within 30 s after
    assert not driver.is_alive()
    err = outcome["error"]
    assert "2 of 3 jobs failed" in err and "member@1" not in err.split("failed;")[1].split("rerun")[0]
    # SLURM's SIGTERM (scancel, or the time limit) reaches the member's process: the job reports the signal if it
    # can, or ends with no result; the scheduler's state says which of the two ended it
    why = r"(ended by the scheduler without a result|SweepError: member@\d: `python member.py \d` was killed by SIG\w+)"
    assert re.search(rf"member@2: job {ids['member@2']} CANCELLED: {why}", err), err
    assert re.search(rf"member@3: job {ids['member@3']} TIMEOUT: {why}", err), err
    assert f"log: {root / 'sweeps' / 'member' / ids['member@2']}_0_log.err" in err
    assert "rerun `biaslab sweep grid.yaml --executor slurm` to submit only what is missing" in err
    assert slurm.job(ids["member@3"])["JobState"] == "TIMEOUT"
    for item in (2, 3):  # nothing half written
        assert not list(root.glob(f"m{item}.txt*"))
    status = dvc_grid.status(root)
    assert "member@2" in status and "member@3" in status and "member@1" not in status
    assert f"{ids['member@2']} CANCELLED" in log.read_text()  # the failure is in the sweep's log too

    (root / "hang2").unlink()
    (root / "hang3").unlink()
    again = sweep.sweep(cfg, "slurm", root=root, jobs=3, folder=root / "sweeps", echo=lambda _: None)
    assert [r.stage for r in again if r.how == "job"] == ["member@2", "member@3"]
    assert (root / "all.txt").read_text() == "b+bb+bbb" and "up to date" in dvc_grid.status(root)


def test_job_states_come_from_squeue_without_an_accounting_store(slurm):
    """The test cluster has no accounting store (as many small clusters): sacct cannot answer, so the sweep reads
    states from squeue and no poll warns."""
    assert not sweep.slurm_has_accounting()
    proc = slurm.run("sacct", "--jobs", "1", check=False)
    assert proc.returncode != 0 or "disabled" in proc.stderr + proc.stdout
    out = slurm.run("sbatch", "--parsable", "--time=1", f"--output={slurm.folder}/%j.out", "--wrap", "true").stdout.strip()
    slurm.wait_for(out, {"COMPLETED"})
    watcher = sweep.SqueueWatcher(delay_s=60)
    watcher.register_job(out)
    watcher.update()
    assert watcher.get_state(out, mode="cache") == "COMPLETED" and watcher.num_calls == 1
