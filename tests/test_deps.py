"""Stage dependencies that cannot be incomplete: dvc.yaml lists every library module a stage runs (its notebook's
imports, transitively, and its params schemas, less the infrastructure), the raw data its readers read, and every params key its
notebook reads."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from biaslab import deps, notebook_params, stages

from conftest import REPO


def test_every_stage_lists_what_it_runs():
    assert deps.check(REPO) == [], "run `biaslab deps --write` and review the dvc.yaml diff"


@pytest.mark.parametrize("stage", stages.all_stages(REPO))
def test_every_params_key_a_notebook_reads_is_listed(stage):
    assert notebook_params.unlisted_reads(stage, REPO) == []


def fake_project(tmp_path: Path) -> Path:
    """A copy of the repository's library, dvc.yaml and params.yaml, with a notebook that imports one module."""
    root = tmp_path / "p"
    shutil.copytree(REPO / "lib", root / "lib", ignore=shutil.ignore_patterns("__pycache__"))
    for f in ("dvc.yaml", "params.yaml"):
        shutil.copy(REPO / f, root / f)
    shutil.copytree(REPO / "notebooks", root / "notebooks")
    return root


@pytest.mark.slow
def test_an_unlisted_import_is_reported_and_write_fixes_it(tmp_path):
    root = fake_project(tmp_path)
    nb = root / "notebooks" / "ragfair" / "02_bbq.py"
    nb.write_text(nb.read_text().replace("from biaslab import config\n", "from biaslab import config, index\n", 1))
    found = deps.problems("ragfair_bbq", root)
    assert "ragfair_bbq: runs lib/biaslab/index.py but does not list it in deps" in found
    # a module imported only inside a function of an imported module counts too
    lib = root / "lib" / "biaslab" / "ragfair" / "bbq_build.py"
    lib.write_text(lib.read_text() + "\n\ndef later():\n    from ..intersect import splits\n    return splits\n")
    found = deps.problems("ragfair_bbq", root)
    assert "ragfair_bbq: runs lib/biaslab/intersect/splits.py but does not list it in deps" in found
    deps.write(root)
    assert deps.problems("ragfair_bbq", root) == []
    assert "lib/biaslab/index.py" in stages.deps("ragfair_bbq", root)


def test_a_module_listed_but_not_run_is_reported(tmp_path):
    root = fake_project(tmp_path)
    text = (root / "dvc.yaml").read_text()
    (root / "dvc.yaml").write_text(text.replace("      - notebooks/ragfair/02_bbq.py\n",
                                                "      - notebooks/ragfair/02_bbq.py\n      - lib/biaslab/losses.py\n"))
    assert "ragfair_bbq: lists lib/biaslab/losses.py, which it does not run" in " ".join(
        deps.problems("ragfair_bbq", root))


@pytest.mark.slow
def test_package_data_a_module_reads_is_a_dependency(tmp_path):
    """fetch reads the data manifest shipped in the package: dropping it from the stage's deps is reported (a new
    reader module beside fetch must not turn the data folder into a dependency that hides the manifest)."""
    root = fake_project(tmp_path)
    assert "lib/biaslab/data/manifest.json" in stages.deps("fetch", root)
    text = (root / "dvc.yaml").read_text()
    (root / "dvc.yaml").write_text(text.replace("      - lib/biaslab/data/manifest.json\n", "", 1))
    assert "fetch: runs lib/biaslab/data/manifest.json but does not list it in deps" in deps.problems("fetch", root)
    deps.write(root)
    assert deps.problems("fetch", root) == [] and "lib/biaslab/data/manifest.json" in stages.deps("fetch", root)


def test_a_data_reader_needs_its_raw_folder(tmp_path):
    root = fake_project(tmp_path)
    nb = root / "notebooks" / "ragfair" / "02_bbq.py"
    nb.write_text(nb.read_text().replace("from biaslab import config\n", "from biaslab import config\nfrom biaslab.data import sbic\n", 1))
    assert "ragfair_bbq: reads data/raw/sbic (through biaslab.data) but does not list it in deps" in deps.problems(
        "ragfair_bbq", root)


def test_static_params_reads_follow_aliases(tmp_path):
    nb = tmp_path / "nb.py"
    nb.write_text("\n".join([
        "P = config.stage_params(globals(), 'x')",
        "T, E = P.intersect.train, P.intersect.evaluate",
        "S = P.ragfair.seat",
        "f(T.epochs, E.k, P.common.seed, S)",
        "for run, spec in P.ragcontrol.train.runs.items():",
        "    pass",
        "C = P.intersect.paragraphs.corpora[corpus]",
        "g(C.n_biased, P.llm)",
    ]))
    assert notebook_params.params_reads(nb) == {"intersect.train.epochs", "intersect.evaluate.k", "common.seed", "ragfair.seat",
                                     "ragcontrol.train.runs", "intersect.paragraphs.corpora.*", "llm"}


def test_the_params_check_catches_an_unlisted_key(tmp_path):
    root = fake_project(tmp_path)
    nb = root / "notebooks" / "intersect" / "05_train.py"
    nb.write_text(nb.read_text() + "\nprint(P.intersect.evaluate.k)\n")
    assert notebook_params.unlisted_reads("intersect_train@" + stages.stage_members("intersect_train", root)[0].split("@")[1],
                               root) == ["intersect.evaluate.k"]


def test_compress_lists_a_sub_package_as_its_folder_and_the_data_readers_one_by_one():
    lib = REPO / "lib" / "biaslab"
    some = {lib / "llm" / "base.py", lib / "llm" / "__init__.py", lib / "io.py"}
    assert deps.compress(some, REPO) == ["lib/biaslab/io.py", "lib/biaslab/llm"]  # the package as a whole
    readers = {lib / "data" / "__init__.py", lib / "data" / "seat.py"}  # data ships the manifest: file by file
    assert deps.compress(readers, REPO) == ["lib/biaslab/data/__init__.py", "lib/biaslab/data/seat.py"]


def test_infrastructure_is_in_no_closure_and_what_decides_bytes_is():
    lib = REPO / "lib" / "biaslab"
    needed = {f.relative_to(lib).as_posix() for f in deps.required_lib("ragfair_seat", REPO)}
    assert not {"run.py", "stages.py", "config.py", "paths.py", "atomic.py", "usage.py"} & needed
    assert {"io.py", "runtime.py", "embed/__init__.py", "ragfair/seat_audit.py", "ragfair/config.py"} <= needed
    assert deps.is_infrastructure("biaslab.run") and not deps.is_infrastructure("biaslab.io")


def test_compact_dvc_yaml_is_the_same_yaml():
    import yaml

    block = ("stages:\n  s:\n    params:\n      - a.b\n      - \"c.${item}\"\n    outs:\n      - r/x.csv:\n"
             "          cache: false\n      - r/y.csv:\n          cache: false\n          persist: true\n")
    short = deps.compact(block)
    assert yaml.safe_load(short) == yaml.safe_load(block)
    assert "params: [a.b, \"c.${item}\"]" in short and "- r/x.csv: {cache: false}\n" in short
    assert "- r/y.csv: {cache: false, persist: true}\n" in short
    assert deps.compact(short) == short


def test_parameter_cell_lists_every_name_of_the_stage():
    cell = notebook_params.parameter_cell("intersect_train@indic-srk4-C1", REPO)
    assert cell.splitlines()[0] == 'run = "indic-srk4-C1"  # the member this notebook runs'
    assert "seed = ...  # common.seed" in cell and "max_triplets = ...  # intersect.train.max_triplets" in cell


def test_every_committed_report_file_is_a_declared_stage_output():
    """A file a stage writes but dvc.yaml does not list escapes DVC (never restaled, never checked) and the report
    cannot name the notebook that made it (reports/intersect/results/k_selection.csv once was one)."""
    import subprocess

    from biaslab import stages
    from biaslab.paths import REPORT_INPUTS

    tracked = subprocess.run(["git", "ls-files", "reports"], cwd=REPO, capture_output=True, text=True,
                             check=True).stdout.split()
    outs = [o for s in stages.all_stages(REPO) for o in stages.outs(s, REPO)]
    stray = [f for f in tracked if not f.startswith(REPORT_INPUTS)  # the report stage's inputs
             and not any(f == o or f.startswith(o.rstrip("/") + "/") for o in outs)]
    assert not stray, f"written under reports/ but no stage's output in dvc.yaml: {stray}"
