"""params.yaml as typed, validated objects, and the parameters of one stage.

**One value, one place.** Every default lives in ``params.yaml`` and only there: the schema classes below (and
each paper's ``biaslab.<paper>.config``) declare types and bounds but no default values, so a key missing from
params.yaml is an error naming the key, never a silent fallback. (The only defaults in the schema are ``None`` /
``False`` on the optional fields of list or dict *items* — a run that does not set ``lora`` does not use LoRA —
and ``tests/test_params_drift.py`` keeps it that way.)

**Sections.** The shared sections ``common``, ``data``, ``models`` and ``llm`` are defined here; a paper's section
is the ``SECTION`` class of ``biaslab.<paper>.config``, found by name, so adding a paper touches no other paper's
files. Every section forbids unknown keys and checks types strictly: a typo (``n_sample``) or a wrong type
(``n_samples: "abc"``) fails before any work starts, with the dotted key, the offending value and the fix.

**A stage's parameters.** :func:`stage_params` is how a notebook gets its values: it reads params.yaml, applies
the overrides the notebook received (papermill ``-p`` or ``biaslab run STAGE --set``; a ``...`` in the
notebook's ``parameters`` cell means "the params.yaml value"), validates, and returns a view that exposes only
the keys the stage lists in dvc.yaml — reading any other key is an error, so a stage's ``params`` cannot be
incomplete. Library functions never read params.yaml: they receive values as arguments.
"""

from __future__ import annotations

import functools
import importlib
import os
import warnings
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model, field_validator

FROM_PARAMS = ...  # a notebook parameter left at ``...`` takes its value from params.yaml


class ParamsError(ValueError):
    """params.yaml (or a notebook parameter) is invalid; the message names the key and the fix."""


class Section(BaseModel):
    """Base of every params section: unknown keys rejected, strict types, immutable."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class Uncertainty(Section):
    """How every headline number's interval is computed (``biaslab.stats``)."""

    rounds: int = Field(gt=0)  # bootstrap resamples
    confidence: float = Field(gt=0, lt=1)  # two-sided interval level


class Common(Section):
    seed: int
    device: str  # auto | cpu | cuda | cuda:N
    batch_size: int = Field(gt=0)  # encoding batch size
    uncertainty: Uncertainty

    @field_validator("device")
    @classmethod
    def _device(cls, v: str) -> str:
        if v not in ("auto", "cpu", "cuda") and not (v.startswith("cuda:") and v[5:].isdigit()):
            raise ValueError("must be auto, cpu, cuda or cuda:N")
        return v


DATASETS = (
    "seat",
    "indibias",
    "sbic",
    "bbq",
    "twinviews_13k",
    "debiasing_rag_kim2025",
    "genderbias_ir_rekabsaz2020",
    "msmarco_fair_queries_rekabsaz2021",
    "grep_biasir",
    "trec_fair_2022",
    "wikitext2_valid_test",
    "trecdl_passage_bm25_top100_text", "jigsaw_identity_term_bias_testsets", "bias_in_bios_samples",
    "msmarco_train_triples_splade_toy",
)
DatasetName = Literal[DATASETS]  # type: ignore[valid-type]


class Data(Section):
    raw_dir: str
    datasets: list[DatasetName]
    allow_online: bool  # download from the official location when no mirror is configured


class Models(Section):
    """How logical model names resolve to weights (``biaslab.models``)."""

    allow_downloads: bool  # let hub ids download (needs network)
    encoder: str  # the default bi-encoder (a logical name in biaslab.models)
    local_dirs: dict[str, str]  # logical name -> folder with weights


class OpenAIParams(Section):
    base_url: str
    model: str
    api_key_env: str  # the key is read from this environment variable, never a file
    timeout: float = Field(gt=0)
    max_retries: int = Field(ge=0)


class LLM(Section):
    backend: Literal["rules", "transformers", "openai"]
    model: str  # logical name for the transformers backend
    max_new_tokens: int = Field(gt=0)
    temperature: float = Field(ge=0)
    top_p: float = Field(gt=0, le=1)
    cache: bool
    openai: OpenAIParams


class Report(Section):
    """The reproduction report (``biaslab.report``): which papers, in which order."""

    papers: list[str]  # paper sections; each needs reports/paper_values/<paper>.yaml and a claims table

    @field_validator("papers")
    @classmethod
    def _papers(cls, v: list[str]) -> list[str]:
        if not v:
            raise ValueError("report.papers is empty: list the papers the report covers")
        for name in v:
            if name in SHARED:
                raise ValueError(f"report.papers: {name} is a shared section, not a paper")
            section_model(name)  # an unknown name fails here, naming the known sections
        return v


SHARED: dict[str, type[Section]] = {"common": Common, "data": Data, "models": Models, "llm": LLM, "report": Report}


@functools.cache
def section_model(name: str) -> type[Section]:
    """The schema of a top-level section: a shared one, or ``SECTION`` of ``biaslab.<name>.config``."""
    if name in SHARED:
        return SHARED[name]
    try:
        module = importlib.import_module(f"biaslab.{name}.config")
    except ModuleNotFoundError as err:
        if err.name in (f"biaslab.{name}", f"biaslab.{name}.config"):
            raise ParamsError(f"{name}: unknown section — the sections are {', '.join(SHARED)} and one per paper "
                              f"(a package biaslab.<paper> with a config module); remove it or fix its spelling") from None
        raise
    return module.SECTION


@functools.cache
def _params_model(names: tuple[str, ...]) -> type[BaseModel]:
    return create_model("Params", __base__=_ParamsBase, **{n: (section_model(n), ...) for n in names})


class _ParamsBase(Section):
    def get(self, dotted: str) -> Any:
        """The value at a dotted key (``ragfair.seat.n_samples``)."""
        node: Any = self
        for part in dotted.split("."):
            if isinstance(node, BaseModel):
                if part not in type(node).model_fields:
                    raise ParamsError(f"params: no key {dotted!r} (unknown part {part!r})")
                node = getattr(node, part)
            elif isinstance(node, Mapping) and part in node:
                node = node[part]
            else:
                raise ParamsError(f"params: no key {dotted!r}")
        return node


def _format_errors(err: ValidationError, source: str) -> str:
    lines = []
    for e in err.errors():
        key = ".".join(str(p) for p in e["loc"]) or "(top level)"
        if e["type"] == "extra_forbidden":
            parent = ".".join(str(p) for p in e["loc"][:-1])
            lines.append(f"  {key}: unknown key — remove it or fix its spelling (see the keys of "
                         f"{parent or 'the top level'} in params.yaml and its schema in biaslab)")
        elif e["type"] == "missing":
            lines.append(f"  {key}: missing — every knob is written in params.yaml (there are no hidden defaults); "
                         "add it")
        elif isinstance(e.get("input"), dict):  # a whole section failed a cross-field check: the message says why
            lines.append(f"  {key}: {e['msg']}")
        else:
            lines.append(f"  {key}: {e['msg']} (got {e.get('input')!r})")
    return f"invalid parameters in {source}:\n" + "\n".join(lines)


def validate(raw: dict[str, Any], source: str, sections: Iterable[str] | None = None):
    """Typed ``Params`` of ``raw`` (a params.yaml mapping). With ``sections``, only those top-level sections are
    validated and present (a stage checks what it reads); without, every section in ``raw``, which must include
    the shared ones."""
    if not isinstance(raw, dict):
        raise ParamsError(f"{source}: expected a mapping of sections at the top level, got {type(raw).__name__}")
    names = tuple(dict.fromkeys([*SHARED, *raw])) if sections is None else tuple(dict.fromkeys(sections))
    problems = []
    for n in names:
        try:
            section_model(n)
        except ParamsError as err:
            problems.append(f"  {err}")
    if problems:
        raise ParamsError(f"invalid parameters in {source}:\n" + "\n".join(problems))
    try:
        return _params_model(names).model_validate({n: raw[n] for n in names if n in raw})
    except ValidationError as err:
        raise ParamsError(_format_errors(err, source)) from None


def read_yaml(path: str | os.PathLike) -> dict[str, Any]:
    path = Path(path)
    if not path.is_file():
        raise ParamsError(f"{path}: file not found — run from the repository root or set BIASLAB_ROOT")
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as err:
        raise ParamsError(f"{path}: not valid YAML: {err}") from None


def params_path(root: Path | None = None) -> Path:
    from .paths import repo_root

    return (root or repo_root()) / "params.yaml"


def load_params(path: str | os.PathLike | None = None, sections: Iterable[str] | None = None):
    """Read and validate params.yaml (default: the repository's) — every section, or only ``sections``."""
    path = Path(path) if path else params_path()
    return validate(read_yaml(path), str(path), sections)


def _schema_at(dotted: str) -> Any:
    """The schema type at a dotted key: a Section class for a section, else the field's annotation."""
    parts = dotted.split(".")
    node: Any = section_model(parts[0])
    for part in parts[1:]:
        if isinstance(node, type) and issubclass(node, BaseModel):
            if part not in node.model_fields:
                raise ParamsError(f"params: no key {dotted!r} (unknown part {part!r})")
            node = node.model_fields[part].annotation
        else:  # inside a dict field (e.g. intersect.paragraphs.corpora.<corpus>): the dict's value type
            args = getattr(node, "__args__", ())
            if len(args) != 2:
                raise ParamsError(f"params: no key {dotted!r}")
            node = args[1]
    return node


def leaf_names(keys: Iterable[str]) -> dict[str, str]:
    """Map notebook variable names to the dotted keys they carry.

    A key that names a section (``ragfair.seat``) contributes each of its fields; any other key (``common.seed``,
    ``ragfair.train.runs``) contributes its last component. Two keys giving the same name is an error."""
    names: dict[str, str] = {}
    for key in keys:
        schema = _schema_at(key)
        children = (
            {f"{key}.{f}": f for f in schema.model_fields}
            if isinstance(schema, type) and issubclass(schema, BaseModel)
            else {key: key.rsplit(".", 1)[-1]}
        )
        for dotted, name in children.items():
            if name in names:
                raise ParamsError(f"parameter name {name!r} comes from both {names[name]} and {dotted}; "
                                  "list a narrower key in the stage's params")
            names[name] = dotted
    return names


def _set(raw: dict[str, Any], dotted: str, value: Any) -> None:
    node = raw
    parts = dotted.split(".")
    for part in parts[:-1]:
        node = node.setdefault(part, {})
    node[parts[-1]] = value


def _plain(value: Any) -> Any:
    """A value as plain JSON-ready data (sections as dicts), e.g. for a papermill parameter."""
    if isinstance(value, BaseModel):
        return value.model_dump()
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


# ------------------------------------------------------------------------------------ a stage's view
def _covered(dotted: str, keys: tuple[str, ...]) -> bool:
    return any(dotted == k or dotted.startswith(k + ".") for k in keys)


def _leads_to(dotted: str, keys: tuple[str, ...]) -> bool:
    return any(k.startswith(dotted + ".") for k in keys)


class StageParams:
    """The validated parameters of one stage, restricted to the keys its dvc.yaml ``params`` list.

    Attribute access works as on the full params (``P.intersect.train.max_seq_length``); a key the stage does
    not list raises :class:`ParamsError` naming the key and the fix, so what a notebook reads is exactly what
    DVC watches. Fully listed sections come back as the real (immutable) schema objects, ready to hand to the
    library."""

    __slots__ = ("_keys", "_obj", "_prefix", "_stage")

    def __init__(self, obj: Any, keys: Iterable[str], stage: str, prefix: str = ""):
        object.__setattr__(self, "_obj", obj)
        object.__setattr__(self, "_keys", tuple(keys))
        object.__setattr__(self, "_stage", stage)
        object.__setattr__(self, "_prefix", prefix)

    def _child(self, name: str, value: Any) -> Any:
        dotted = f"{self._prefix}{name}"
        if _covered(dotted, self._keys):
            return value
        if _leads_to(dotted, self._keys):
            return StageParams(value, self._keys, self._stage, dotted + ".")
        listed = ", ".join(self._keys) or "(none)"
        raise ParamsError(f"stage {self._stage!r} reads {dotted}, which its params in dvc.yaml do not list "
                          f"({listed}): add {dotted} (or its section) to the stage's params, so DVC reruns the "
                          "stage when it changes")

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        obj = self._obj
        if isinstance(obj, BaseModel):
            if name not in type(obj).model_fields:
                if not self._prefix:  # a section the stage does not list (so it was not even validated)
                    return self._child(name, None)
                raise AttributeError(f"params: no key {self._prefix}{name}")
            return self._child(name, getattr(obj, name))
        raise AttributeError(f"{self._prefix.rstrip('.')} is a mapping: use [{name!r}]")

    def __getitem__(self, key: str) -> Any:
        obj = self._obj
        if not isinstance(obj, Mapping):
            raise TypeError(f"{self._prefix.rstrip('.')} is a section: use .{key}")
        if key not in obj:
            raise KeyError(f"params: no key {self._prefix}{key}")
        return self._child(str(key), obj[key])

    def __contains__(self, key: str) -> bool:
        return key in self._obj

    def __setattr__(self, name, value):
        raise AttributeError("parameters are read-only: override them with papermill -p or biaslab run --set")

    def get(self, dotted: str) -> Any:
        node: Any = self
        for part in dotted.split("."):
            node = node[part] if isinstance(node, Mapping) or (
                isinstance(node, StageParams) and isinstance(node._obj, Mapping)) else getattr(node, part)
        return node

    @property
    def keys_listed(self) -> tuple[str, ...]:
        return self._keys

    def __repr__(self) -> str:
        return f"StageParams({self._stage!r}, {self._prefix.rstrip('.') or 'params'}, keys={list(self._keys)})"


def stage_params(namespace: Mapping[str, Any], stage: str, root: Path | None = None, *,
                 check_hash_seed: bool = True) -> StageParams:
    """The typed parameters of ``stage`` (``name`` or ``name@member``), as its notebook sees them.

    ``namespace`` is the notebook's ``globals()`` (or any mapping of overrides): each variable named after one of
    the stage's keys (the flattened names of :func:`leaf_names`) overrides the params.yaml value unless it is
    ``...``. The stage's keys come from dvc.yaml through DVC's own resolver (``foreach`` members and ``${item}``
    resolved by DVC). Overridden values are validated with the same schema, so ``-p n_samples abc`` fails here
    with the key's name instead of misbehaving later."""
    from . import stages

    keys = stages.params_keys(stages.resolve(stage, root))
    raw = read_yaml(params_path(root))
    sections = tuple(dict.fromkeys(k.split(".")[0] for k in keys))
    overridden = []
    for name, dotted in leaf_names(keys).items():
        value = namespace.get(name, FROM_PARAMS)
        if value is not FROM_PARAMS:
            _set(raw, dotted, _plain(value))
            overridden.append(dotted)
    source = f"the parameters of stage {stage!r}" + (f" (overridden: {', '.join(overridden)})" if overridden else "")
    params = validate(raw, source, sections)
    if check_hash_seed and ("common.seed" in keys or "common" in keys):
        seed = str(params.common.seed)
        if os.environ.get("PYTHONHASHSEED") not in (None, seed):
            warnings.warn(f"PYTHONHASHSEED is {os.environ['PYTHONHASHSEED']} but the stage's seed is {seed}: run "
                          "it through `biaslab run` (which starts the kernel with the seed) for identical results",
                          stacklevel=2)
    return StageParams(params, keys, stage)
