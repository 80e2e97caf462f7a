"""Stage dependencies that cannot be incomplete: derived from what each stage actually computes with.

A stage's notebook imports ``biaslab`` modules, which import others, and validates the params sections it reads
with ``biaslab.<paper>.config``. The library files a stage depends on are the transitive closure, *within
biaslab*, of its notebook's imports — every ``import`` statement counts, including those inside functions (a
conservative reading: a lazily imported module is a dependency as soon as the stage can reach it) — plus the
schema modules of the params sections it lists, plus the package files a module in it reads (``PACKAGE_DATA``:
the data manifest). A data reader module in that closure (one with a ``DATASET`` constant) adds its raw data
folder ``data/raw/<dataset>``.

``INFRASTRUCTURE`` is left out of every closure: the runner and the code that only moves a stage's work around
(reading params.yaml and dvc.yaml, paths, atomic renames, timing logs, the command line, sweeps, raw-data checks). It decides
no output's bytes — the integration test reruns stages and compares outputs byte for byte — so editing it leaves
every stage current. What decides bytes stays in: the file formats (``biaslab.io``), seeding
(``biaslab.runtime``), the computations.

``biaslab deps --check`` compares every stage of dvc.yaml with that closure (the test suite runs it);
``biaslab deps --write`` rewrites the ``lib/`` entries of each stage's ``deps`` in dvc.yaml (comments kept), listing
a package folder when the stage needs every module in it. Data and model dependencies produced by other stages
(``data/processed/...``) are declared by hand; reads of params keys are checked by :func:`params_reads` statically
and enforced at run time by ``config.StageParams``.
"""

from __future__ import annotations

import ast
import io
import json
import re
from collections.abc import Iterable
from pathlib import Path

from . import config, notebook_params, stages
from .paths import repo_root

PACKAGE = "biaslab"
# Files shipped inside the package that a module reads (not imports): they are dependencies of every stage that
# runs the module. Keep this beside any new ``importlib.resources`` read.
PACKAGE_DATA = {"data/fetch.py": ("data/manifest.json",)}
# Modules that run stages but decide none of their outputs (see the module docstring): never a stage dependency.
INFRASTRUCTURE = frozenset({"run", "stages", "config", "overrides", "paths", "atomic", "usage", "deps", "notebook_params",
                            "cli", "sweep", "rawcheck"})


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
        todo += [module_file(m, root) for m in imported_modules(f, root) if not is_infrastructure(m)]
    return {f for f in seen if f.is_relative_to(lib_root(root))}


def is_infrastructure(module: str) -> bool:
    """Whether ``biaslab.x`` (or a module inside it) is in :data:`INFRASTRUCTURE`."""
    parts = module.split(".")
    return len(parts) > 1 and parts[0] == PACKAGE and parts[1] in INFRASTRUCTURE


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
    """The library files ``stage`` computes with: its notebook's imports and the schemas of its params sections,
    less :data:`INFRASTRUCTURE`."""
    root = root or repo_root()
    seeds = [stages.stage_notebook(stage, root)]
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
    """Repository-relative entries for ``files``: a sub-package of ``biaslab`` (a paper's package, ``metrics``,
    ``llm``, ...) is listed as its folder as soon as the stage computes with any module of it — a paper's stages
    depend on the paper's package as a whole. The modules directly under ``biaslab`` stay listed one by one, and
    so do those of a folder that ships package data (``PACKAGE_DATA``: ``biaslab.data``), so a stage that reads
    one data set does not go stale when another data set's reader changes."""
    lib = lib_root(root)
    data_dirs = {(lib / d).parent for files_ in PACKAGE_DATA.values() for d in files_}
    out: set[str] = set()
    for f in files:
        rel = f.relative_to(lib)
        top = lib / rel.parts[0]
        if len(rel.parts) > 1 and top not in data_dirs:
            out.add(top.relative_to(root).as_posix())
        else:
            out.add(f.relative_to(root).as_posix())
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

    from .atomic import atomic_open

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
    _block_style(doc)
    text = io.StringIO()
    rt.dump(doc, text)
    with atomic_open(path) as fh:
        fh.write(compact(text.getvalue()))
    return path


def _block_style(node) -> None:
    """Every mapping and sequence under ``node`` in block style (what :func:`compact` starts from)."""
    from ruamel.yaml.comments import CommentedMap, CommentedSeq

    if isinstance(node, (CommentedMap, CommentedSeq)):
        node.fa.set_block_style()
        for child in node.values() if isinstance(node, CommentedMap) else node:
            _block_style(child)


def compact(text: str, width: int = 118) -> str:
    """dvc.yaml in the project's layout: an output and its flags on one line (``- path: {cache: false}``)
    and a stage's ``params`` as one flow list wrapped at ``width`` — the same YAML, a third of the lines."""
    def flags(m: re.Match) -> str:
        return m.group(1) + " {" + ", ".join(re.findall(r"\S+: \S+", m.group(2))) + "}\n"

    text = re.sub(r"^( +- [^\n]+:)\n((?: +(?:cache|persist): (?:true|false)\n)+)", flags, text, flags=re.M)

    def params(m: re.Match) -> str:
        indent, items = m.group(1), re.findall(r"^ +- (.+)$", m.group(2), flags=re.M)
        lines, line = [], f"{indent}params: ["
        for i, item in enumerate(items):
            quoted = item[:1] in "\"'" and item[:1] == item[-1:]
            item = json.dumps(item) if not quoted and re.search(r"[{}\[\],#&*!|>'\"%@`]", item) else item  # quoted where flow needs it
            piece = item + ("]" if i == len(items) - 1 else ",")
            if len(line) + 1 + len(piece) > width and not line.endswith("["):
                lines.append(line)
                line = f"{indent}  {piece}"
            else:
                line += piece if line.endswith("[") else " " + piece
        return "\n".join([*lines, line]) + "\n"

    return re.sub(r"^( +)params:\n((?:\1  - [^\n:]+\n)+)", params, text, flags=re.M)


def main(argv: list[str] | None = None) -> int:
    import argparse
    import sys

    ap = argparse.ArgumentParser(prog="biaslab deps", description=__doc__.split("\n\n", maxsplit=1)[0])
    ap.add_argument("--write", action="store_true", help="rewrite the lib/ deps of every stage in dvc.yaml")
    ap.add_argument("--cell", metavar="STAGE", help="print the parameters cell the stage's notebook should have")
    args = ap.parse_args(argv)
    if args.cell:
        print(notebook_params.parameter_cell(args.cell))
        return 0
    if args.write:
        print(f"rewrote {write()}")
    found = check() + [f"{s}: reads params {k} but does not list it" for s in stages.all_stages()
                       for k in notebook_params.unlisted_reads(s)]
    for line in found:
        print(line, file=sys.stderr)
    if not found:
        print("every stage lists the library modules, raw data and params keys it uses")
    return 1 if found else 0
