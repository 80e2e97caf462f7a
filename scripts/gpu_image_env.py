"""A Python environment that holds only what the GPU image holds, so that scripts/device_check.sh can run on the CPU as
it will on the GPU machine: an import of a package that neither the image nor the bundle carries fails here as it
would there (the lock's .venv holds DVC, FAISS, ir-measures, Jupyter ..., so a check run with it cannot fail so).

    .venv/bin/python scripts/gpu_image_env.py OUT [--front DIR]

OUT becomes a virtual environment of this Python's base interpreter with its own pip and no packages but links to
this environment's distributions whose names scripts/gpu_image_packages.txt lists (the image's packages, as read on
such a machine); ``--front DIR`` (a ``pip install --target`` folder, e.g. of scripts/gpu_image.txt's versions) puts
its distributions in place of this environment's of the same name. Links, not copies: it takes a second or two.
Versions are the lock's, not the image's (torch, above all, stays this machine's CPU build); what it checks is that
nothing else is needed.
"""

from __future__ import annotations

import argparse
import re
import sys
import sysconfig
import venv
from importlib import metadata
from pathlib import Path

IMAGE = Path(__file__).with_name("gpu_image_packages.txt")


def normalise(name: str) -> str:
    """A distribution name as pip compares them (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def image_packages(path: Path = IMAGE) -> set[str]:
    """The image's distribution names: one per line, ``#`` comments."""
    names = (line.split("#")[0].strip() for line in path.read_text().splitlines())
    return {normalise(name) for name in names if name}


def top_level(dist: metadata.Distribution) -> set[str]:
    """The entries a distribution puts at the top of its site-packages folder (package folders, modules, its
    .dist-info, shared-library folders); files outside it (console scripts under ../../bin) are left out."""
    files = dist.files or []
    return {f.parts[0] for f in files if f.parts and f.parts[0] != ".." and not f.parts[0].endswith(".pth")}


def build(out: Path, fronts: list[Path], wanted: set[str], with_pip: bool = True) -> list[str]:
    """Create ``out`` and link the wanted distributions of ``fronts`` then this environment into its site-packages;
    returns the names linked. A distribution already there (the new environment's own pip) is kept."""
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


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--front", type=Path, action="append", default=[],
                    help="a pip --target folder whose distributions replace this environment's")
    args = ap.parse_args(argv)
    wanted = image_packages()
    linked = build(args.out, args.front, wanted)
    missing = sorted(wanted - set(linked) - {"pip", "setuptools"})
    print(f"gpu_image_env: {args.out}: {len(linked)} of the image's {len(wanted)} packages linked from {sys.prefix} "
          f"(the other {len(missing)} are not installed here: the library and its tests do not use them)")


if __name__ == "__main__":
    main()
