"""Stage dependencies that cannot be incomplete: derived from what each stage actually runs.

A stage runs ``python -m biaslab.run`` (``biaslab/run.py``) on its notebook, which imports ``biaslab`` modules,
which import others, and validates the params sections it reads with ``biaslab.<paper>.config``. The library
files a stage depends on are therefore the transitive closure, *within biaslab*, of the imports of its notebook and
of the runner — every ``import`` statement counts, including those inside functions (a conservative reading:
a lazily imported module is a dependency as soon as the stage can reach it) — plus the schema modules of the
params sections it lists, plus the package files a module in it reads (``PACKAGE_DATA``: the data manifest). A
data reader module in that closure (one with a ``DATASET`` constant) adds its raw data folder
``data/raw/<dataset>``.

``biaslab deps --check`` compares every stage of dvc.yaml with that closure (the test suite runs it);
``biaslab deps --write`` rewrites the ``lib/`` entries of each stage's ``deps`` in dvc.yaml (comments kept), listing
a package folder when the stage needs every module in it. Data and model dependencies produced by other stages
(``data/processed/...``) are declared by hand; reads of params keys are checked by :func:`params_reads` statically
and enforced at run time by ``config.StageParams``.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterable
from pathlib import Path

from . import config, stages
from .paths import repo_root

PACKAGE = "biaslab"
# Files shipped inside the package that a module reads (not imports): they are dependencies of every stage that
# runs the module. Keep this beside any new ``importlib.resources`` read.
PACKAGE_DATA = {"data/fetch.py": ("data/manifest.json",)}


def lib_root(root: Path) -> Path:
    return root / "lib" / PACKAGE


def module_file(module: str, root: Path) -> Path | None:
    """``lib/biaslab/x/y.py`` or ``lib/biaslab/x/y/__init__.py`` for ``biaslab.x.y`` (None if neither exists)."""
    parts = module.split(".")
    if parts[0] != PACKAGE:
        return None
    base = lib_root(root).joinpath(*parts[1:])
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _module_name(path: Path, root: Path) -> str:
    rel = path.relative_to(lib_root(root).parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _with_parents(module: str) -> list[str]:
    parts = module.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts) + 1)]


def imported_modules(path: Path, root: Path) -> set[str]:
    """The ``biaslab`` modules a file imports (absolute and relative, anywhere in the file), with their parent
    packages; ``from pkg import name`` counts ``pkg.name`` when that is a module."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    inside_lib = path.is_relative_to(lib_root(root))
    here = _module_name(path, root) if inside_lib else ""
    package = here if inside_lib and path.name == "__init__.py" else here.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == PACKAGE:
                    found.update(_with_parents(alias.name))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                if not inside_lib:
                    continue
                base_parts = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join(base_parts + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            if base.split(".")[0] != PACKAGE:
                continue
            found.update(_with_parents(base))
            for alias in node.names:
                if module_file(f"{base}.{alias.name}", root) is not None:
                    found.add(f"{base}.{alias.name}")
    return {m for m in found if module_file(m, root) is not None}


def closure(files: Iterable[Path], root: Path) -> set[Path]:
    """Every ``lib/biaslab`` file reachable by imports from ``files`` (the files themselves included when they are
    library files)."""
    todo = list(files)
    seen: set[Path] = set()
    while todo:
        f = todo.pop()
        if f in seen:
            continue
        seen.add(f)
        todo += [module_file(m, root) for m in imported_modules(f, root)]
    return {f for f in seen if f.is_relative_to(lib_root(root))}


def _datasets_of(path: Path) -> set[str]:
    """The data sets a reader module reads: its top-level string constants naming a data set."""
    out = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and node.value.value in config.DATASETS:
            out.add(node.value.value)
    return out


def stage_sections(stage: str, root: Path) -> list[str]:
    return list(dict.fromkeys(k.split(".")[0] for k in stages.stage_params(stage, root)))


def required_lib(stage: str, root: Path | None = None) -> set[Path]:
    """The library files ``stage`` runs: runner + notebook imports + the schemas of its params sections."""
    root = root or repo_root()
    seeds = [lib_root(root) / "run.py", stages.stage_notebook(stage, root)]
    for section in stage_sections(stage, root):
        if section not in config.SHARED:
            seeds.append(lib_root(root) / section / "config.py")
    files = closure(seeds, root)
    lib = lib_root(root)
    return files | {lib / d for f in files for d in PACKAGE_DATA.get(f.relative_to(lib).as_posix(), ())}


def required_data(stage: str, lib_files: Iterable[Path], root: Path) -> set[str]:
    """``data/raw/<dataset>`` for each data reader in ``lib_files`` (not for the stage that produces data/raw)."""
    data_pkg = lib_root(root) / "data"
    needed = {f"data/raw/{d}" for f in lib_files if f.parent == data_pkg for d in _datasets_of(f)}
    produced = stages.outs(stage, root)
    return {d for d in needed if not any(d == o or d.startswith(o.rstrip("/") + "/") for o in produced)}


def _covers(dep: str, path: str) -> bool:
    """A dependency entry (a file or a folder) covers ``path``."""
    dep = dep.rstrip("/")
    return path == dep or path.startswith(dep + "/")


def compress(files: set[Path], root: Path) -> list[str]:
    """Repository-relative entries for ``files``: a package folder when every ``.py`` file under it is needed —
    except a folder that ships package data (``PACKAGE_DATA``): its modules stay listed one by one, so a new module
    there does not make every stage that reads the data stale, and the data file stays visible."""
    lib = lib_root(root)
    needed = {f.relative_to(root).as_posix() for f in files}
    out: set[str] = set(needed)
    data_dirs = {(lib / d).parent for files_ in PACKAGE_DATA.values() for d in files_}
    for pkg in sorted({p for f in files for p in f.parents if p != lib and p.is_relative_to(lib) and p not in data_dirs},
                      key=lambda p: len(p.parts)):
        all_py = {f.relative_to(root).as_posix() for f in pkg.rglob("*.py") if "__pycache__" not in f.parts}
        rel = pkg.relative_to(root).as_posix()
        if all_py and all_py <= needed:
            out -= all_py
            out = {o for o in out if not o.startswith(rel + "/")}
            out.add(rel)
    return sorted(out)


def problems(stage: str, root: Path | None = None) -> list[str]:
    """What ``stage`` runs but dvc.yaml does not list (library files, raw data), and library files it lists but does
    not run."""
    root = root or repo_root()
    lib = required_lib(stage, root)
    deps = stages.deps(stage, root)
    out = []
    for f in sorted(lib):
        rel = f.relative_to(root).as_posix()
        if not any(_covers(d, rel) for d in deps):
            out.append(f"{stage}: runs {rel} but does not list it in deps")
    for d in sorted(required_data(stage, lib, root)):
        if not any(_covers(x, d) or _covers(d, x) for x in deps):  # the folder, a parent, or files inside it
            out.append(f"{stage}: reads {d} (through {PACKAGE}.data) but does not list it in deps")
    wanted = set(compress(lib, root))
    for d in deps:
        if d.startswith("lib/") and (d.endswith(".py") or (root / d).is_dir()) and d not in wanted:
            out.append(f"{stage}: lists {d}, which it does not run (or a narrower/wider form than needed)")
    return out


def check(root: Path | None = None) -> list[str]:
    """:func:`problems` of every stage of dvc.yaml."""
    root = root or repo_root()
    return [p for s in stages.all_stages(root) for p in problems(s, root)]


def write(root: Path | None = None) -> Path:
    """Rewrite the ``lib/`` entries (and add missing raw-data entries) of every stage's deps in dvc.yaml."""
    from ruamel.yaml import YAML

    from .io import atomic_open

    root = root or repo_root()
    path = root / "dvc.yaml"
    rt = YAML()
    rt.preserve_quotes = True
    rt.width = 4096
    rt.indent(mapping=2, sequence=4, offset=2)
    doc = rt.load(path.read_text(encoding="utf-8"))
    for name, body in doc["stages"].items():
        spec = body.get("do", body)
        members = stages.stage_members(name, root)
        lib: set[Path] = set()
        for m in members:
            lib |= required_lib(m, root)
        entries = compress(lib, root)
        old = list(spec.get("deps", []))
        keep = [d for d in old if not str(d).startswith("lib/")]  # every lib/ entry is derived
        notebook = [d for d in keep if str(d).startswith("notebooks/")]
        rest = [d for d in keep if not str(d).startswith("notebooks/")]
        missing = sorted({d for m in members for d in required_data(m, required_lib(m, root), root)
                          if not any(_covers(x, d) or _covers(d, x) for x in stages.deps(m, root))})
        spec["deps"] = [*notebook, *entries, *rest, *missing]
    with atomic_open(path) as fh:
        rt.dump(doc, fh)
    return path


# ------------------------------------------------------------------------------ params a notebook reads
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


def main(argv: list[str] | None = None) -> int:
    import argparse
    import sys

    ap = argparse.ArgumentParser(prog="biaslab deps", description=__doc__.split("\n\n", maxsplit=1)[0])
    ap.add_argument("--write", action="store_true", help="rewrite the lib/ deps of every stage in dvc.yaml")
    ap.add_argument("--cell", metavar="STAGE", help="print the parameters cell the stage's notebook should have")
    args = ap.parse_args(argv)
    if args.cell:
        print(parameter_cell(args.cell))
        return 0
    if args.write:
        print(f"rewrote {write()}")
    found = check() + [f"{s}: reads params {k} but does not list it" for s in stages.all_stages()
                       for k in unlisted_reads(s)]
    for line in found:
        print(line, file=sys.stderr)
    if not found:
        print("every stage lists the library modules, raw data and params keys it uses")
    return 1 if found else 0
