"""One value, one place: every default lives in params.yaml. These tests fail when a copy of a value appears
anywhere else — a schema default, a notebook default (test_run.py checks the parameters cells) or a library
signature default for a knob params.yaml sets."""

from __future__ import annotations

import ast
import typing
from pathlib import Path

import pytest
from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from biaslab import config, notebook_params

from conftest import REPO

SECTIONS = ["common", "data", "models", "llm", "report", *notebook_params._paper_sections()]


def _models_in(annotation) -> list[tuple[type[BaseModel], bool]]:
    """(model, is_item) for the section models an annotation holds: directly (a sub-section) or as the values
    of a list / dict (an item, e.g. one run of ``runs``)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [(annotation, False)]
    out = []
    for arg in typing.get_args(annotation):
        for model, _ in _models_in(arg):
            out.append((model, typing.get_origin(annotation) in (list, dict)))
    return out


def _walk(model: type[BaseModel], path: str, item: bool, seen: list) -> None:
    seen.append((model, path, item))
    for name, field in model.model_fields.items():
        for sub, is_item in _models_in(field.annotation):
            _walk(sub, f"{path}.{name}" + ("[*]" if is_item else ""), item or is_item, seen)


def all_models() -> list[tuple[type[BaseModel], str, bool]]:
    seen: list = []
    for s in SECTIONS:
        _walk(config.section_model(s), s, False, seen)
    return seen


@pytest.mark.parametrize("model,path,item", all_models(), ids=lambda v: v if isinstance(v, str) else "")
def test_schema_holds_no_default_values(model, path, item):
    """A section's fields are all required (params.yaml writes every knob). The optional fields of list / dict
    items may default to None / False only ("not set": a run that does not set ``lora`` does not use LoRA; a run's
    unset ``tau`` inherits the section's)."""
    for name, field in model.model_fields.items():
        default = field.default
        if default is PydanticUndefined and field.default_factory is None:
            continue
        assert item, f"{path}.{name} has the schema default {default!r}: write it in params.yaml only"
        assert field.default_factory is None and default in (None, False), (
            f"{path}[*].{name} defaults to {default!r}: an item may only default to None / False")


def test_params_yaml_writes_every_schema_key():
    raw = config.read_yaml(REPO / "params.yaml")
    config.validate(raw, "params.yaml")  # every required key present, none unknown
    assert set(raw) == set(SECTIONS), "params.yaml must have every section (and no other)"


def params_leaf_names() -> set[str]:
    return {path.rsplit(".", 1)[-1].removesuffix("[*]") for _, path, _ in all_models()} | {
        name for model, _, _ in all_models() for name in model.model_fields}


# Library signatures whose defaults are fixed from outside the project, or whose parameter only shares a name with
# a params key. Each entry says why; everything else that carries a params knob takes it without a default.
ALLOWED = {
    ("embed/__init__.py", "__init__", "cache"): "the embedding cache switch (no params key; tests turn it off)",
    ("llm/base.py", "generate", "task"): "the rule task of an LLM request, not ragcontrol.train.runs[*].task",
    ("llm/cache.py", "cache_key", "task"): "the rule task of an LLM request",
    ("ragcontrol/reader.py", "decide", "judge"): "a judge object (only generate mode needs one)",
    ("intersect/reference.py", "build_sbic_reference", "encoder"): "an Encoder object (offline rewrites only)",
    ("ragcontrol/tasks.py", "_answers", "splits"): "already-loaded question frames, not intersect.splits",
    ("ragcontrol/tasks.py", "eval_corpus", "splits"): "already-loaded question frames, not intersect.splits",
    ("ragcontrol/rag.py", "answer_task", "judge"): "a judge object (only generate mode needs one)",
    ("ragcontrol/rag.py", "answer_task", "llm"): "a generating LLM object (generate mode only), not the llm section",
    ("ragcontrol/reader.py", "decide", "llm"): "a generating LLM object (generate mode only), not the llm section",
    ("config.py", "stage_params", "check_hash_seed"): "a runner switch, not a knob",
    # public signatures the cscl issue fixes (outside code calls them by these names); stages pass params values
    ("losses.py", "supcon_loss", "temperature"): "public API (SupCon's usual default); stages pass cscl's value",
    ("losses.py", "cs_infonce_loss", "temperature"): "public API; stages pass cscl's value",
    ("cscl/inlp.py", "debiasing_projection", "seed"): "public API (Ravfogel et al.'s signature); stages pass the seed",
    ("cscl/train.py", "Objective", "temperature"): "None = unused by CE / adversarial objectives; required (checked) "
                                                   "for the contrastive ones, which the stage builds from params",
    ("cscl/train.py", "Objective", "gamma"): "None = unused outside one_stage (required there, checked)",
    ("cscl/train.py", "Objective", "n_adversaries"): "None = unused outside adversarial (required there, checked)",
    ("cscl/train.py", "Objective", "lam_diff"): "None = unused outside adversarial (required there, checked)",
    ("cscl/train.py", "Objective", "adv_hidden"): "None = unused outside adversarial (required there, checked)",
    ("cscl/train.py", "Objective", "schedule"): "None = unused outside adversarial (required there, checked)",
    ("cscl/inlp.py", "debiasing_projection", "min_accuracy"): "public API (Ravfogel et al.'s signature, fixed by the "
                                                              "cscl issue); the stage passes cscl.methods.inlp's value",
    ("cscl/inlp.py", "debiasing_projection", "by_class"): "public API (as above); the stage passes the params value",
    ("cscl/tasks.py", "build", "full_data"): "None = the offline stand-in; the stage passes cscl.full_data.get(task)",
    ("cscl/train.py", "fit", "val"): "the validation frame (None = no early stopping), not cscl.splits.val",
    ("cscl/head.py", "fit_head", "val"): "validation features (None = none), not cscl.splits.val",
    ("atomic.py", "atomic_open", "mode"): "a file mode, not cscl.methods[*].mode",
    ("stats.py", "mean_ci", "seed"): "public API (the verdicts' specification); the t interval draws nothing",
    ("stats.py", "paired_mean_ci", "seed"): "public API, as mean_ci",
    ("stats.py", "ci_mean", "method"): "the bootstrap interval method, not cscl.augment.strategy",
}


def library_defaults(root: Path = REPO) -> list[tuple[str, str, str, str]]:
    lib = root / "lib" / "biaslab"
    names = params_leaf_names()
    out = []
    for f in sorted(lib.rglob("*.py")):
        rel = f.relative_to(lib).as_posix()
        for node in ast.walk(ast.parse(f.read_text())):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            a = node.args
            pos = a.posonlyargs + a.args
            defaults = [None] * (len(pos) - len(a.defaults)) + a.defaults
            for arg, d in [*zip(pos, defaults, strict=True), *zip(a.kwonlyargs, a.kw_defaults, strict=True)]:
                if d is not None and arg.arg in names and (rel, node.name, arg.arg) not in ALLOWED:
                    out.append((rel, node.name, arg.arg, ast.unparse(d)))
        # dataclass fields are signatures too (GenParams(max_new_tokens=...), MethodConfig(alpha=...))
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.ClassDef) and any("dataclass" in ast.unparse(d) for d in node.decorator_list):
                for item in node.body:
                    if (isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name) and item.value is not None
                            and item.target.id in names and (rel, node.name, item.target.id) not in ALLOWED):
                        out.append((rel, node.name, item.target.id, ast.unparse(item.value)))
    return out


def test_library_signatures_do_not_shadow_params_values():
    found = library_defaults()
    assert not found, ("library defaults for knobs params.yaml sets (pass the value from the stage instead): "
                       + "; ".join(f"{f}:{fn}({a}={d})" for f, fn, a, d in found))


def test_allowlist_is_not_stale():
    lib = REPO / "lib" / "biaslab"
    for (rel, fn, arg), why in ALLOWED.items():
        tree = ast.parse((lib / rel).read_text())
        funcs = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == fn]
        fields = [t.target.id for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == fn  # dataclasses
                  for t in n.body if isinstance(t, ast.AnnAssign) and isinstance(t.target, ast.Name)]
        assert arg in fields or any(arg in [x.arg for x in [*f.args.args, *f.args.kwonlyargs]] for f in funcs), (
            rel, fn, arg, why)


def test_the_drift_check_catches_a_shadowing_default(tmp_path):
    """The check itself can fail: a library function with `seed=0` is reported."""
    fake = tmp_path / "lib" / "biaslab"
    fake.mkdir(parents=True)
    (fake / "x.py").write_text("from dataclasses import dataclass\n\n\ndef f(data, *, seed: int = 0, max_seq_length=128, "
                               "other=1):\n    return data\n\n\n@dataclass\nclass G:\n    temperature: float = 0.0\n")
    assert {(r[2], r[3]) for r in library_defaults(tmp_path)} == {("seed", "0"), ("max_seq_length", "128"),
                                                                   ("temperature", "0.0")}


def test_library_never_reads_params_yaml():
    """Only the boundary reads params.yaml: the config module (for stages and the CLI), its override merge, the
    runner, the CLI and the checks of stage declarations."""
    lib = REPO / "lib" / "biaslab"
    boundary = {"config.py", "overrides.py", "run.py", "cli.py", "deps.py", "notebook_params.py", "stages.py"}
    readers = []
    for f in sorted(lib.rglob("*.py")):
        rel = f.relative_to(lib).as_posix()
        text = f.read_text()
        if rel not in boundary and ("load_params(" in text or "read_yaml(" in text or "stage_params(" in text):
            readers.append(rel)
    assert readers == [], f"library modules read params.yaml behind the caller's back: {readers}"


def test_notebook_parameter_cells_repeat_no_value():
    """Besides the foreach member, a parameters cell assigns only `...` (checked per stage in test_run.py; here for
    every notebook file, including any not yet wired to a stage)."""
    for nb in sorted((REPO / "notebooks").rglob("*.py")):
        text = nb.read_text()
        start = text.index('# %% tags=["parameters"]')
        cell = text[start:].split("\n# %%", 1)[0]
        for node in ast.parse(cell).body:
            if isinstance(node, ast.Assign) and not (isinstance(node.value, ast.Constant)
                                                     and node.value.value is Ellipsis):
                names = [t.id for t in node.targets if isinstance(t, ast.Name)]
                assert names in (["run"], ["corpus"], ["task"], ["reader_key"], ["run_seed"]), (
                    f"{Path(nb).relative_to(REPO)}: {names} = {ast.unparse(node.value)} repeats a value")
