"""Which params.yaml keys a stage's notebook reads, found statically, and the ``parameters`` cell it should have.

A notebook reads its values through the object ``config.stage_params`` returns (conventionally ``P``): the keys it
reads are the maximal attribute chains on that object and on aliases of its sections (:func:`params_reads`).
:func:`unlisted_reads` compares them with the keys the stage lists in dvc.yaml (the test suite runs it for every
stage; at run time ``config.StageParams`` refuses an unlisted read too).
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

from . import config, stages
from .paths import repo_root


def _chain(node: ast.AST) -> list[str] | None:
    """``['P', 'a', 'b', '[k]']`` for ``P.a.b["k"]`` (``[*]`` for a subscript chosen at run time); None when the
    chain does not start at a name."""
    parts: list[str] = []
    while True:
        if isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        elif isinstance(node, ast.Subscript):
            constant = isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str)
            parts.append(f"[{node.slice.value}]" if constant else "[*]")
            node = node.value
        elif isinstance(node, ast.Name):
            parts.append(node.id)
            return parts[::-1]
        else:
            return None


@functools.cache
def _schema_keys() -> frozenset[str]:
    """Every dotted schema path (fields of sections; dict values are opaque) — to cut a chain where it leaves the
    params (``P.ragfair.train.runs.items`` reads ``ragfair.train.runs``)."""
    from pydantic import BaseModel

    out: set[str] = set()

    def walk(model, prefix):
        for name, field in model.model_fields.items():
            key = f"{prefix}{name}"
            out.add(key)
            t = field.annotation
            if isinstance(t, type) and issubclass(t, BaseModel):
                walk(t, key + ".")

    for section in ("common", "data", "models", "llm", *_paper_sections()):
        out.add(section)
        walk(config.section_model(section), section + ".")
    return frozenset(out)


def _paper_sections() -> list[str]:
    lib = Path(__file__).parent
    return sorted(p.parent.name for p in lib.glob("*/config.py"))


def _key(parts: list[str]) -> str | None:
    """The params key a chain of parts (below the root) reads: the longest schema path, extended by one item
    when it indexes a dict-valued key (``corpora["indic"]``, or ``corpora.*`` for an index chosen at run time)."""
    keys = _schema_keys()
    best = None
    for i, part in enumerate(parts):
        if part.startswith("["):
            if best is not None and ".".join(parts[:i]) == best and _is_mapping(best):
                return f"{best}.{part[1:-1]}"
            break
        k = ".".join(parts[: i + 1])
        if k not in keys:
            break
        best = k
    return best


def params_reads(notebook: Path) -> set[str]:
    """The params keys a notebook reads, found statically: maximal attribute chains on the object returned by
    ``config.stage_params`` (conventionally ``P``) and on aliases of its sections (``T = P.intersect.train``); an
    alias used whole (``f(S)``) reads its whole key."""
    tree = ast.parse(notebook.read_text(encoding="utf-8"))
    roots: dict[str, list[str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            ch = _chain(node.value.func)
            if ch and ch[-1] == "stage_params":
                roots.update({t.id: [] for t in node.targets if isinstance(t, ast.Name)})

    def key_of(chain: list[str]) -> str | None:
        return _key(roots[chain[0]] + chain[1:]) if chain[0] in roots else None

    # aliases: Name = <chain on a root> (also T, E = P.a, P.b), in source order
    alias_values: set[int] = set()
    for node in sorted((n for n in ast.walk(tree) if isinstance(n, ast.Assign)), key=lambda n: n.lineno):
        pairs: list[tuple[ast.AST, ast.AST]] = []
        for t in node.targets:
            if isinstance(t, ast.Tuple) and isinstance(node.value, ast.Tuple) and len(t.elts) == len(node.value.elts):
                pairs += list(zip(t.elts, node.value.elts, strict=True))
            else:
                pairs.append((t, node.value))
        for t, v in pairs:
            ch = _chain(v)
            if isinstance(t, ast.Name) and ch and ch[0] in roots and len(ch) > 1:
                k = key_of(ch)
                if k is not None and not _is_leaf(k) and "[" not in "".join(ch):
                    roots[t.id] = roots[ch[0]] + ch[1:]
                    alias_values.add(id(v))
    inner = {id(n.value) for n in ast.walk(tree) if isinstance(n, (ast.Attribute, ast.Subscript))}
    reads: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in inner or id(node) in alias_values:
            continue
        if isinstance(node, (ast.Attribute, ast.Subscript)) and not isinstance(node.ctx, ast.Store):
            ch = _chain(node)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and roots.get(node.id):
            ch = [node.id]  # an alias used whole
        else:
            continue
        if ch and ch[0] in roots:
            k = key_of(ch)
            if k is not None:
                reads.add(k)
    return reads


def _is_leaf(key: str) -> bool:
    from pydantic import BaseModel

    t = config._schema_at(key)
    return not (isinstance(t, type) and issubclass(t, BaseModel))


def _is_mapping(key: str) -> bool:
    t = config._schema_at(key)
    return getattr(t, "__origin__", None) is dict


def unlisted_reads(stage: str, root: Path | None = None) -> list[str]:
    """Keys the stage's notebook reads (statically) that its params in dvc.yaml do not cover."""
    root = root or repo_root()
    listed = tuple(stages.stage_params(stage, root))
    nb = stages.stage_notebook(stage, root)
    return sorted(k for k in params_reads(nb) if not (
        config._covered(k, listed) or (k.endswith(".*") and config._leads_to(k[:-2], listed))))


# ------------------------------------------------------------------------------ a notebook's parameters cell
def parameter_cell(stage: str, root: Path | None = None) -> str:
    """The ``parameters`` cell a stage's notebook should have: its member names (from the stage's ``cmd``) with a
    default member, then every flattened params name set to ``...`` (= the params.yaml value), one per line with
    the dotted key it carries (papermill parses one assignment per line)."""
    root = root or repo_root()
    lines = [f"{k} = \"{v}\"  # the member this notebook runs" for k, v in stages.stage_sets(stage, root).items()]
    lines += ["# `...` = the value in params.yaml (the keys dvc.yaml lists for this stage). Set a value here, with papermill",
              "# -p or with `biaslab run STAGE --set name=value` to override it."]
    lines += [f"{name} = ...  # {dotted}" for name, dotted in config.leaf_names(stages.stage_params(stage, root)).items()]
    return "\n".join(lines)
