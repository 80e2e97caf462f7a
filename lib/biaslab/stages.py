"""Read the pipeline's stage definitions from dvc.yaml (the single place they are declared)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from .paths import repo_root


class StageError(ValueError):
    """A stage is missing from dvc.yaml or is not declared in the project's notebook-stage form."""


def load_dvc_yaml(root: Path | None = None) -> dict[str, Any]:
    path = (root or repo_root()) / "dvc.yaml"
    return yaml.safe_load(path.read_text(encoding="utf-8")) or {}


def _substitute(obj: Any, member: str, item: Any) -> Any:
    """Resolve ``${key}``, ``${item}`` and ``${item.field}`` of a foreach member."""
    if isinstance(obj, str):
        if isinstance(item, dict):
            obj = re.sub(r"\$\{item\.(\w+)\}", lambda m: str(item[m.group(1)]), obj)
        return obj.replace("${key}", member).replace("${item}", str(item))
    if isinstance(obj, list):
        return [_substitute(o, member, item) for o in obj]
    if isinstance(obj, dict):
        return {_substitute(k, member, item): _substitute(v, member, item) for k, v in obj.items()}
    return obj


def _foreach(spec: dict[str, Any], root: Path | None) -> Any:
    """The foreach collection; ``${a.b}`` is looked up in params.yaml, as DVC does."""
    members = spec["foreach"]
    if isinstance(members, str):
        m = re.fullmatch(r"\$\{\s*([\w.-]+)\s*\}", members)
        if not m:
            raise StageError(f"unsupported foreach expression {members!r}")
        node: Any = yaml.safe_load(((root or repo_root()) / "params.yaml").read_text(encoding="utf-8"))
        for part in m.group(1).split("."):
            if not isinstance(node, dict) or part not in node:
                raise StageError(f"foreach {members}: params.yaml has no key {m.group(1)!r}")
            node = node[part]
        members = node
    return members


def stage_members(stage: str, root: Path | None = None) -> list[str]:
    """``[stage]`` for a plain stage, ``[stage@m1, stage@m2, ...]`` for a foreach stage."""
    spec = load_dvc_yaml(root).get("stages", {}).get(stage)
    if spec is None:
        raise StageError(f"dvc.yaml has no stage {stage!r}")
    if "foreach" not in spec:
        return [stage]
    members = _foreach(spec, root)
    return [f"{stage}@{m}" for m in (members if isinstance(members, dict) else map(str, members))]


def stage_spec(stage: str, root: Path | None = None) -> dict[str, Any]:
    """The stage's body; for a foreach stage (``name@member``) its ``do`` template with ``${key}``,
    ``${item}`` and ``${item.field}`` resolved for that member (foreach over a list or a dict literal)."""
    name, _, member = stage.partition("@")
    stages = load_dvc_yaml(root).get("stages", {})
    if name not in stages:
        raise StageError(f"dvc.yaml has no stage {name!r}; stages are: {', '.join(stages) or '(none)'}")
    spec = stages[name]
    if "do" in spec:
        if not member:
            first = next(iter(_foreach(spec, root)))
            raise StageError(f"stage {name!r} runs per member: name one, e.g. {name}@{first}")
        members = _foreach(spec, root)
        items = members if isinstance(members, dict) else {str(m): m for m in members}
        if member not in items:
            raise StageError(f"stage {name!r} has no member {member!r} (members: {list(items)})")
        return _substitute(spec["do"], member, items[member])
    return spec


def stage_params(stage: str, root: Path | None = None) -> list[str]:
    """The params.yaml keys a stage declares (strings, or ``{params.yaml: [...]}`` entries)."""
    keys: list[str] = []
    for entry in stage_spec(stage, root).get("params", []) or []:
        if isinstance(entry, str):
            keys.append(entry)
        elif isinstance(entry, dict):
            for file, sub in entry.items():
                if Path(file).name != "params.yaml":
                    raise StageError(f"stage {stage!r}: only params.yaml is supported, got {file}")
                keys.extend(sub or [])
    return keys


def _first(paths: list[Any], suffix: str, under: str | None = None) -> str | None:
    for p in paths or []:
        p = next(iter(p)) if isinstance(p, dict) else p
        if str(p).endswith(suffix) and (under is None or str(p).startswith(under)):
            return str(p)
    return None


def stage_notebook(stage: str, root: Path | None = None) -> Path:
    nb = _first(stage_spec(stage, root).get("deps", []), ".py", "notebooks/")
    if nb is None:
        raise StageError(f"stage {stage!r} lists no notebooks/*.py dependency in dvc.yaml")
    return (root or repo_root()) / nb


def stage_executed_notebook(stage: str, root: Path | None = None) -> Path:
    out = _first(stage_spec(stage, root).get("outs", []), ".ipynb")
    if out is None:
        raise StageError(f"stage {stage!r} lists no executed .ipynb among its outs in dvc.yaml")
    return (root or repo_root()) / out


def stage_sets(stage: str, root: Path | None = None) -> dict[str, str]:
    """The ``--set name=value`` overrides written in the stage's ``cmd`` (e.g. a foreach member's ``run``), so
    that ``python -m biaslab.run name@member`` runs exactly what ``dvc repro name@member`` runs."""
    import shlex
    from itertools import pairwise

    cmd = stage_spec(stage, root).get("cmd", "")
    tokens = shlex.split(" ".join(cmd) if isinstance(cmd, list) else str(cmd))
    out: dict[str, str] = {}
    for flag, value in pairwise(tokens):
        if flag == "--set" and "=" in value:
            name, _, val = value.partition("=")
            out[name.strip()] = val
    return out
