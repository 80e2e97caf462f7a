"""A Python environment that holds only what the GPU image holds, so that scripts/device_check.sh can run on the CPU as
it will on the GPU machine: an import of a package that neither the image nor the bundle carries fails here as it
would there (the lock's .venv holds DVC, FAISS, ir-measures, Jupyter ..., so a check run with it cannot fail so).

    .venv/bin/python scripts/gpu_image_env.py OUT [--front DIR]             links: a second or two (CI)
    .venv/bin/python scripts/gpu_image_env.py OUT --install PYTHON3.12      a replica from the registry: minutes

Links: OUT becomes a virtual environment of this Python's base interpreter with its own pip and no packages but links
to this environment's distributions whose names scripts/gpu_image_packages.txt lists (the image's packages, as read
on such a machine); ``--front DIR`` (a ``pip install --target`` folder of scripts/gpu_image.txt) puts its
distributions in place of this environment's of the same name. Versions are then the lock's where the image's need
another Python (torch stays this machine's CPU build, numpy the lock's).

``--install``: OUT becomes a virtual environment of the given Python 3.12 (the image's) with the image's versions
of scripts/gpu_image.txt, torch 2.11 with its CUDA libraries (about 5 GB; it runs on a CPU too), and the lock's pins
of the image's other packages that the library uses, fetched from the package registry: the closest this side gets
to the GPU machine before it is lent (scripts/device_check.sh with ``PYTHON=OUT/bin/python``, on a bundle built with
``DEVICE_PYTHON=3.12``).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import sysconfig
import venv
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

IMAGE = Path(__file__).with_name("gpu_image_packages.txt")
VERSIONS = Path(__file__).with_name("gpu_image.txt")
LOCK = Path(__file__).parents[1] / "requirements-lock.txt"
IMAGE_PYTHON = "3.12"  # the image's Python (its torch and numpy releases need it)


def normalise(name: str) -> str:
    """A distribution name as pip compares them (PEP 503)."""
    return canonicalize_name(name)


def image_packages(path: Path = IMAGE) -> set[str]:
    """The image's distribution names: one per line, ``#`` comments."""
    names = (line.split("#")[0].strip() for line in path.read_text().splitlines())
    return {normalise(name) for name in names if name}


def top_level(dist: metadata.Distribution) -> set[str]:
    """The entries a distribution puts at the top of its site-packages folder (package folders, modules, its
    .dist-info, shared-library folders); files outside it (console scripts under ../../bin) are left out."""
    files = dist.files or []
    return {f.parts[0] for f in files if f.parts and f.parts[0] != ".." and not f.parts[0].endswith(".pth")}


def check_out(out: Path) -> None:
    """``out`` is replaced: refuse a folder that holds anything but a virtual environment (a typo must not empty one)."""
    if out.exists() and (not out.is_dir() or (any(out.iterdir()) and not (out / "pyvenv.cfg").is_file())):
        sys.exit(f"gpu_image_env: {out} exists and is not a virtual environment; give a new folder")


def build(out: Path, fronts: list[Path], wanted: set[str], with_pip: bool = True) -> list[str]:
    """Create ``out`` and link the wanted distributions of ``fronts`` then this environment into its site-packages;
    returns the names linked. A distribution already there (the new environment's own pip) is kept."""
    check_out(out)
    venv.create(out, with_pip=with_pip, symlinks=True, clear=True)
    site = Path(sysconfig.get_paths(vars={"base": str(out), "platbase": str(out)})["purelib"])
    taken = {normalise(d.metadata["Name"]) for d in metadata.distributions(path=[str(site)])}
    linked = []
    for source in [*fronts, Path(sysconfig.get_paths()["purelib"])]:
        for dist in metadata.distributions(path=[str(source)]):
            name = normalise(dist.metadata["Name"])
            if name not in wanted or name in taken:
                continue
            taken.add(name)
            linked.append(name)
            for entry in sorted(top_level(dist)):
                target = site / entry
                if not target.exists() and (source / entry).exists():
                    target.symlink_to((source / entry).resolve())
    return sorted(linked)


def pins(path: Path) -> dict[str, str]:
    """{normalised name: requirement line} of a pip requirements file (``name==version``, an optional marker)."""
    lines = (line.split("#")[0].strip() for line in path.read_text().splitlines())
    return {normalise(Requirement(line).name): line for line in lines if line}


def install(out: Path, python: str, wanted: set[str]) -> list[str]:
    """Create ``out`` with ``python`` (the image's minor version, else an error) and install in it, from the registry:
    torch at the image's version with its dependencies (its CUDA libraries), the lock's pins of the wanted packages
    the image's versions do not name, then the image's versions, both without dependencies (the lock is the
    resolution). Returns the names installed."""
    check_out(out)
    try:
        found = subprocess.run([python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError) as err:
        sys.exit(f"gpu_image_env: cannot run {python} ({err}); give the path of a Python {IMAGE_PYTHON}")
    if found != IMAGE_PYTHON:
        sys.exit(f"gpu_image_env: --install needs the image's Python {IMAGE_PYTHON}; {python} is {found}")
    image, lock = pins(VERSIONS), pins(LOCK)
    subprocess.run([python, "-m", "venv", "--clear", str(out)], check=True)
    pip = [str(out / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    subprocess.run([*pip, image["torch"]], check=True)
    from_lock = sorted(n for n in wanted & lock.keys() if n not in image and n not in ("pip", "setuptools", "torch"))
    subprocess.run([*pip, "--no-deps", *(lock[n] for n in from_lock)], check=True)
    subprocess.run([*pip, "--no-deps", *(line for n, line in image.items() if n != "torch")], check=True)
    return sorted([*from_lock, *image])


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--front", type=Path, action="append", default=[],
                    help="a pip --target folder whose distributions replace this environment's")
    ap.add_argument("--install", metavar="PYTHON", help="a Python 3.12 to build a replica with, from the registry")
    args = ap.parse_args(argv)
    wanted = image_packages()
    if args.install:
        done = install(args.out, args.install, wanted)
        print(f"gpu_image_env: {args.out}: {len(done)} packages at the image's versions or the lock's, for "
              f"{args.install}")
        return
    linked = build(args.out, args.front, wanted)
    missing = sorted(wanted - set(linked) - {"pip", "setuptools"})
    print(f"gpu_image_env: {args.out}: {len(linked)} of the image's {len(wanted)} packages linked from {sys.prefix} "
          f"(the other {len(missing)} are not installed here: the library and its tests do not use them)")


if __name__ == "__main__":
    main()
