"""The command line as a user meets it: what --help says, what --set takes, "did you mean", and exit statuses
(2: the command or its input is invalid; 1: the work failed)."""

from __future__ import annotations

import argparse
import shutil

import pytest

from biaslab import cli, config, run, stages

from conftest import REPO


def _commands() -> dict[str, argparse.ArgumentParser]:
    ap = cli.build_parser()
    return next(a for a in ap._actions if isinstance(a, argparse._SubParsersAction)).choices


def test_every_option_of_every_command_shows_its_default_in_help_once():
    for name, parser in _commands().items():
        fmt = parser._get_formatter()
        for action in parser._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            text = fmt._expand_help(action) if action.help else ""
            assert text.count("default") <= 1, (name, action.option_strings, text)  # not "(default: X) (default: None)"
            if action.default not in (None, False, []):  # unset, a switch, a repeatable option: nothing to show
                assert "default" in text, (name, action.option_strings, text)


def test_run_help_lists_the_stages_and_says_what_set_takes(capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["run", "--help"])
    assert exit_.value.code == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "ragfair_seat" in out and "cscl_train@{" in out  # plain stages and foreach stages with their members
    assert "--out" in out and "common.seed=1" in out and "parameters cell" in out
    assert "exit status" in out


def test_set_takes_a_cell_name_or_a_params_key_and_an_entry_inside_a_mapping(project):
    declared = {"seed", "n_samples", "tests", "model"}
    assert run.resolve_sets({"common.seed": 1}, "ragfair_seat", declared, project) == {"seed": 1}
    assert run.resolve_sets({"seed": 1, "ragfair.seat.n_samples": 5}, "ragfair_seat", declared, project) == {
        "seed": 1, "n_samples": 5}
    runs = config.read_yaml(project / "params.yaml")["ragfair"]["train"]["runs"]
    got = run.resolve_sets({"ragfair.train.runs.lora.alpha": 0.5}, "ragfair_train@lora", {"runs"}, project)
    assert got["runs"]["lora"]["alpha"] == 0.5 and got["runs"]["wiseft"] == runs["wiseft"]  # one entry changed
    with pytest.raises(config.ParamsError, match=r"reads no params.yaml key 'ragfair.seat.n_sample' \(did you mean "
                                                 r"'ragfair.seat.n_samples'\?\)"):
        run.resolve_sets({"ragfair.seat.n_sample": 5}, "ragfair_seat", declared, project)
    with pytest.raises(config.ParamsError, match=r"has no entry 'lroa' \(did you mean 'lora'\?\)"):
        run.resolve_sets({"ragfair.train.runs.lroa.alpha": 0.5}, "ragfair_train@lora", {"runs"}, project)


def test_a_params_key_reaches_the_kernel_like_its_cell_name(project, monkeypatch):
    import papermill

    (project / "notebooks" / "ragfair").mkdir(parents=True)
    shutil.copy(REPO / "notebooks/ragfair/01_seat_audit.py", project / "notebooks/ragfair/01_seat_audit.py")
    seen = {}

    def fake_execute(nb, out, parameters, **kw):
        seen.update(parameters)
        raise papermill.PapermillExecutionError(0, 1, "stop", "Stop", "stopped by the test", [])

    monkeypatch.setattr(papermill, "execute_notebook", fake_execute)
    for var in ("PYTHONHASHSEED", "JUPYTER_PATH", "BIASLAB_ROOT", "TQDM_DISABLE", "HF_HUB_OFFLINE",
                "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE", "BIASLAB_ALLOW_DOWNLOADS"):
        monkeypatch.setenv(var, "")
    assert cli.main(["run", "ragfair_seat", "--set", "ragfair.seat.n_samples=7", "--set", "common.seed=3"]) == 1
    assert seen == {"n_samples": 7, "seed": 3}


def test_unknown_names_get_a_suggestion_and_exit_2(project, capsys):
    assert cli.main(["run", "ragfair_sea"]) == 2
    assert "did you mean 'ragfair_seat'?" in capsys.readouterr().err
    member = stages.all_stages(project)
    cscl = next(m for m in member if m.startswith("cscl_train@")).split("@")[1]
    assert cli.main(["run", f"cscl_train@{cscl}x"]) == 2
    assert f"did you mean '{cscl}'?" in capsys.readouterr().err
    assert cli.main(["models", "--check", "minlm"]) == 2
    assert "unknown model 'minlm' (did you mean 'minilm'?)" in capsys.readouterr().err


def test_exit_status_is_2_for_invalid_input_and_1_for_work_that_failed(project, capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["run"])  # argparse: a usage error
    assert exit_.value.code == 2
    assert cli.main(["detect"]) == 2 and "give text(s) or --file" in capsys.readouterr().err
    assert cli.main(["detect", "--file", str(project / "nope.txt")]) == 2
    assert "nope.txt: no such file (a text file, one paragraph per line)" in capsys.readouterr().err
    assert cli.main(["detect", "some text", "--model", "data/models/intersect/nope"]) == 2
    assert "data/models/intersect/nope not found, and no stage of dvc.yaml writes it" in capsys.readouterr().err
    assert cli.main(["sweep", str(project / "missing.yaml"), "--executor", "local"]) == 2
    assert "no such sweep file" in capsys.readouterr().err
    (project / "configs").mkdir()
    shutil.copy(REPO / "configs/gpu.yaml", project / "configs/gpu.yaml")
    assert cli.main(["params", "--apply", "configs/gpu.yml"]) == 2
    assert "configs/gpu.yml not found (did you mean 'configs/gpu.yaml'?); the profiles: configs/gpu.yaml" in \
        capsys.readouterr().err
    assert cli.main(["fetch", "seta"]) == 2  # before any data set is touched
    assert "unknown data set 'seta' (did you mean 'seat'?); known: indibias," in capsys.readouterr().err
    assert cli.main(["claims", "ragfiar"]) == 2
    assert "unknown paper 'ragfiar' (did you mean 'ragfair'?); papers: ragfair, intersect" in capsys.readouterr().err
    assert cli.main(["claims", "ragfair"]) == 1  # not built (yet) in this project: the work cannot be done
    assert "does not exist; run the stage that writes it" in capsys.readouterr().err
    (project / "notebooks" / "ragfair").mkdir(parents=True)
    shutil.copy(REPO / "notebooks/ragfair/01_seat_audit.py", project / "notebooks/ragfair/01_seat_audit.py")
    (project / "params.yaml").write_text((project / "params.yaml").read_text().replace("seed: 42", "seed: forty"))
    assert cli.main(["run", "ragfair_seat"]) == 2 and "common.seed" in capsys.readouterr().err
    assert cli.main(["params"]) == 2


def test_a_missing_input_names_the_stage_that_builds_it(project):
    from biaslab import stages as st

    assert st.producer("data/processed/ragfair/bbq.parquet", project) == "ragfair_bbq"
    assert st.producer("reports/intersect/results/k_sweep.csv", project) == "intersect_evaluate"
    assert st.producer("nowhere/x.csv", project) is None
    with pytest.raises(FileNotFoundError, match=r"a bias card needs .*bbq.parquet: build it with `dvc repro ragfair_bbq`"):
        st.build_missing([project / "data/processed/ragfair/bbq.parquet"], "a bias card", build=False)
    with pytest.raises(st.StageError, match="no stage of dvc.yaml writes it"):
        st.build_missing([project / "nowhere.csv"], "a bias card", build=True)
    st.build_missing([project / "params.yaml"], "a bias card", build=False)  # present: nothing to build


@pytest.mark.parametrize("command", ["claims", "params"])  # 44 kB of tables; one short line, written at exit
def test_a_reader_that_stops_early_gets_no_traceback(command):
    """`biaslab claims | head`: the pipe closes before the output is written; exit 1, no traceback."""
    import os
    import subprocess
    import sys

    code = f"import sys; from biaslab.cli import main; sys.exit(main([{command!r}]))"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}  # stdout buffered, as in a shell
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=REPO, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    proc.stdout.close()  # no reader: the first write, or the flush, fails with EPIPE
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 1 and "Traceback" not in err and "BrokenPipe" not in err, err


def test_a_failed_fetch_leaves_the_committed_data_reports():
    """DVC deletes a stage's outputs before it runs it, unless they persist: a fetch that cannot find its data (no
    mirror, offline), run by `dvc repro` or by `biaslab detect` / `card` building their inputs, must leave the
    reports/data files git tracks (the stage writes them by temp file and rename, so a failure writes nothing)."""
    flags = {next(iter(o)): next(iter(o.values())) for o in stages.resolve("fetch", REPO)["outs"] if isinstance(o, dict)}
    tracked = {path for path, f in flags.items() if f.get("cache") is False}
    assert tracked == {"reports/data/00_fetch.ipynb", "reports/data/datasets.csv"}
    assert all(flags[path].get("persist") is True for path in tracked)


def test_a_card_becomes_a_model_card_section():
    import pandas as pd

    from biaslab.cards import export
    from biaslab.cards.measure import Card

    card = Card(summary={"seat_abs_es": 0.31, "spd": 0.04, "spd_min": 0.01}, units=pd.DataFrame())
    changes = pd.DataFrame({"measure": ["seat_abs_es", "spd"], "checkpoint": "m", "reference": "minilm",
                            "reference_value": [0.5, 0.05], "bias_change": [-0.19, -0.01],
                            "ci_low": [float("nan"), -0.02], "ci_high": [float("nan"), 0.001]}).set_index("measure")
    rec = export.record("my-encoder", card, "minilm", changes)
    assert rec["checkpoint"] == "my-encoder" and rec["changes"][0]["ci_low"] is None  # NaN -> null in JSON
    md = export.markdown(rec, 0.95)
    assert md.startswith("## Bias evaluation") and "`my-encoder`" in md
    assert "| spd | 0.04 | abs | 0.05 | -0.01 [-0.02, 0.001] |" in md
    assert "| seat_abs_es | 0.31 | lower | 0.5 | -0.19 |" in md  # no per-unit values: no interval
    assert "| spd_min | 0.01 | noise band | – | – |" in md


def test_claims_against_a_revision_shows_what_moved(project, capsys):
    """`biaslab claims PAPER --against REV`: the verdict counts then and now, each claim whose verdict or printed value
    moved (verdict changes first, in bold), the competence checks that flipped; nothing else. A REV that is no
    commit is a usage error (2)."""
    import subprocess

    import pandas as pd

    results = project / "reports" / "cscl" / "results"
    results.mkdir(parents=True)
    for name in ("claims.csv", "competence.csv"):
        shutil.copy(REPO / "reports/cscl/results" / name, results / name)

    def git(*args):
        subprocess.run(["git", "-C", str(project), *args], check=True, capture_output=True)

    git("init", "-q")
    git("add", "-A")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "results")
    assert cli.main(["claims", "cscl", "--against", "HEAD"]) == 0
    out = capsys.readouterr().out
    n = int(pd.read_csv(results / "claims.csv")["kind"].isin(["claim", "check"]).sum())
    assert f"0 of {n} rows moved, 0 of them in verdict\n\ncompetence: 0 of 72" in out and "| claim | kind |" not in out
    assert "competence: 0 of 72 checks moved" in out
    claims = pd.read_csv(results / "claims.csv")
    first, second = claims["claim"].iloc[0], claims["claim"].iloc[5]
    claims.loc[0, "our_value"] += 1.0  # a value moves, its verdict stays
    claims.loc[5, "verdict"] = "contradicted" if claims.loc[5, "verdict"] != "contradicted" else "reproduced"
    claims.to_csv(results / "claims.csv", index=False)
    comp = pd.read_csv(results / "competence.csv")
    comp.loc[3, "passed"] = not comp.loc[3, "passed"]
    comp.to_csv(results / "competence.csv", index=False)
    assert cli.main(["claims", "cscl", "--against", "HEAD"]) == 0
    out = capsys.readouterr().out
    assert f"2 of {n} rows moved, 1 of them in verdict" in out
    rows = [line for line in out.splitlines() if line.startswith("| ") and not line.startswith("| claim | kind |")]
    assert [r.split(" | ")[0][2:] for r in rows] == [second, first]  # the verdict change first
    assert rows[0].endswith("contradicted** |") or rows[0].endswith("reproduced** |")
    assert f"competence: 1 of 72 checks moved between pass and fail\n- {comp.loc[3, 'check']}: " in out
    assert cli.main(["claims", "cscl", "--against", "no-such-rev"]) == 2
    assert "'no-such-rev' is not a commit of the repository" in capsys.readouterr().err
