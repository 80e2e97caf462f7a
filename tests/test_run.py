"""The notebook runner and the stage declarations: every stage's params exist, flatten without clashes, and
match the defaults of its notebook's parameters cell."""

import json

import jupytext
import nbformat
import pytest
import yaml

from biaslab import config, run, stages

from conftest import REPO

STAGES = list(yaml.safe_load((REPO / "dvc.yaml").read_text())["stages"])
MEMBERS = [m for s in STAGES for m in stages.stage_members(s, REPO)]


@pytest.mark.parametrize("stage", MEMBERS)
def test_stage_declares_notebook_output_and_valid_params(stage):
    nb_path = stages.stage_notebook(stage, REPO)
    assert nb_path.is_file(), nb_path
    assert stages.stage_executed_notebook(stage, REPO).suffix == ".ipynb"
    params = config.load_params(REPO / "params.yaml")
    flat = config.flatten_for_notebook(params, stages.stage_params(stage, REPO))
    nb = jupytext.read(nb_path)
    declared = run.parameter_names(nb)
    assert set(flat) <= declared, f"{stage}: params not in the parameters cell: {set(flat) - declared}"
    # the notebook's own defaults equal params.yaml, so JupyterLab and `dvc repro` compute the same thing
    ns: dict = {}
    cell = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
    exec(cell.source, ns)
    member_sets = stages.stage_sets(stage, REPO)
    if any(str(ns.get(k)) != v for k, v in member_sets.items()):
        return  # a foreach notebook's defaults describe its default member only
    for name, value in flat.items():
        assert ns[name] == value, f"{stage}: notebook default {name}={ns[name]!r} but params.yaml has {value!r}"


@pytest.mark.parametrize("stage", STAGES)
def test_stage_cmd_runs_the_runner(stage):
    spec = yaml.safe_load((REPO / "dvc.yaml").read_text())["stages"][stage]
    expected = f"python -m biaslab.run {stage}" + ("@${" if "foreach" in spec else "")
    assert spec.get("do", spec)["cmd"].startswith(expected)


def test_foreach_members_resolve_templates():
    spec = stages.stage_spec("intersect_reference@western", REPO)
    assert "data/raw/sbic" in spec["deps"] and "reports/intersect/01_reference_western.ipynb" in str(spec["outs"])
    assert stages.stage_params("intersect_paragraphs@indic", REPO)[-1] == "intersect.paragraphs.corpora.indic"
    with pytest.raises(stages.StageError, match="no member 'klingon'"):
        stages.stage_spec("intersect_paragraphs@klingon", REPO)
    with pytest.raises(stages.StageError, match="runs per member"):
        stages.stage_spec("intersect_paragraphs", REPO)


def test_member_cmd_sets_are_applied_by_the_runner():
    # `python -m biaslab.run name@member` must run that member, as `dvc repro name@member` does
    assert stages.stage_sets("intersect_train@western-srk4-C1", REPO) == {"run": "western-srk4-C1"}
    assert stages.stage_sets("intersect_reference@indic", REPO) == {"corpus": "indic"}
    assert stages.stage_sets("fetch", REPO) == {}


def test_parameter_names_and_missing_cell():
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("a = 1\nb: int = 2\nc, d = 3, 4", metadata={"tags": ["parameters"]})]
    assert run.parameter_names(nb) == {"a", "b"}
    nb.cells[0].metadata = {}
    with pytest.raises(stages.StageError, match="no cell tagged"):
        run.parameter_names(nb)


def test_strip_run_metadata_makes_cells_stable():
    nb = nbformat.v4.new_notebook()
    nb.metadata["papermill"] = {"start_time": "now"}
    nb.cells = [nbformat.v4.new_code_cell("x = 1", metadata={"papermill": {"duration": 1.2},
                                                             "execution": {"iopub.status.busy": "t"}})]
    run.strip_run_metadata(nb)
    assert "papermill" not in nb.metadata and nb.cells[0]["id"] == "cell-000"
    assert nb.cells[0].metadata == {}


def test_parse_sets_reads_yaml_values():
    assert run.parse_sets(["n_samples=10", "tests=[weat1, weat2]", "model=minilm"]) == {
        "n_samples": 10, "tests": ["weat1", "weat2"], "model": "minilm"}
    with pytest.raises(config.ParamsError, match="expected name=value"):
        run.parse_sets(["oops"])


def test_unknown_stage_and_unknown_override_fail_before_any_kernel(project):
    with pytest.raises(stages.StageError, match="no stage 'nope'"):
        run.execute("nope")
    (project / "notebooks" / "ragfair").mkdir(parents=True)
    (project / "notebooks" / "ragfair" / "01_seat_audit.py").write_text(
        (REPO / "notebooks" / "ragfair" / "01_seat_audit.py").read_text())
    with pytest.raises(config.ParamsError, match=r"parameters \['n_sample'\] are not in its parameters cell"):
        run.execute("ragfair_seat", {"n_sample": 3})
    assert not (project / "reports").exists()


def test_invalid_params_fail_before_any_kernel(project):
    (project / "params.yaml").write_text((project / "params.yaml").read_text().replace("seed: 42", "seed: forty"))
    assert run.main(["ragfair_seat"]) == 1
    assert not (project / "reports").exists()


def test_strip_run_metadata_scrubs_machine_paths(tmp_path):
    import sys

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("x", outputs=[
        nbformat.v4.new_output("stream", name="stderr", text=f"{sys.prefix}/lib/x.py:1: Warning\n"),
        nbformat.v4.new_output("execute_result", data={"text/plain": f"PosixPath('{tmp_path}/reports/a.png')"})])]
    run.strip_run_metadata(nb, tmp_path)
    assert nb.cells[0].outputs[0]["text"] == "<env>/lib/x.py:1: Warning\n"
    assert nb.cells[0].outputs[1]["data"]["text/plain"] == "PosixPath('<repo>/reports/a.png')"


def test_timings_are_logged_outside_the_outputs_and_tabulated(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# title"),
                nbformat.v4.new_code_cell("\nimport torch", metadata={"papermill": {"duration": 4.0}}),
                nbformat.v4.new_code_cell("train()", metadata={"papermill": {"duration": 10.5}}),
                nbformat.v4.new_code_cell("plot()", metadata={"papermill": {"duration": None}})]
    log = tmp_path / "t" / "timings.jsonl"
    run.record_timings(log, "a@x", nb, wall=20.0, top=1)
    run.record_timings(log, "b", nb, wall=15.0)
    first = json.loads(log.read_text().splitlines()[0])
    assert first == {"stage": "a@x", "wall_s": 20.0, "outside_cells_s": 5.5,
                     "slowest_cells": [{"cell": 2, "seconds": 10.5, "source": "train()"}]}
    table = run.summarise_timings(log, cells=2).splitlines()
    assert "a@x" in table[1] and "10.5s train()" in table[1] and "4.0s import torch" in table[2]
    assert table[-1].split()[0] == "35.0" and "2 runs" in table[-1]
    log.write_text("not json\n")
    with pytest.raises(ValueError, match="line 1: not a timings record"):
        run.summarise_timings(log)
    with pytest.raises(FileNotFoundError, match="BIASLAB_TIMINGS"):
        run.summarise_timings(tmp_path / "missing.jsonl")
