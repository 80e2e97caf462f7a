"""Merging an override file into params.yaml: ``biaslab params --apply configs/paper-scale.yaml`` switches to a
documented configuration, validated before anything is written, comments and number spellings kept."""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import Any

import yaml

from .config import ParamsError, params_path, read_yaml, validate


def merge(base: dict[str, Any], override: dict[str, Any]) -> None:
    """Merge ``override`` into ``base`` in place: nested sections key by key, any other value replaced."""
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            merge(base[key], value)
        else:
            base[key] = value


def apply_overrides(overrides_file: str | os.PathLike, params_file: str | os.PathLike | None = None) -> Path:
    """Merge the keys of ``overrides_file`` into params.yaml (comments kept), after validating the result.

    Used to switch to the documented paper-scale configuration: ``biaslab params --apply
    configs/paper-scale.yaml``. Nothing is written when the merged parameters are invalid."""
    from ruamel.yaml import YAML

    from .atomic import atomic_open

    target = Path(params_file) if params_file else params_path()
    override = read_yaml(overrides_file)
    merged = read_yaml(target)
    merge(merged, override)
    validate(merged, f"{target} merged with {overrides_file}")
    rt = YAML()
    rt.preserve_quotes = True
    doc = rt.load(target.read_text(encoding="utf-8"))
    # merge the override's round-trip nodes, so scalars keep their spelling (ruamel would re-emit a float 2e-5
    # as ``2e-05``, which YAML 1.1 readers take for a string)
    merge(doc, rt.load(Path(overrides_file).read_text(encoding="utf-8")))
    buf = io.StringIO()
    rt.dump(doc, buf)
    written = yaml.safe_load(buf.getvalue())
    if written != merged:
        raise ParamsError(f"merging {overrides_file} into {target} would not round-trip through YAML; "
                          "write the override values in plain YAML (e.g. 2.0e-5, not 2e-5)")
    with atomic_open(target) as fh:
        fh.write(buf.getvalue())
    return target
