"""Hard-link the dependencies of a wheel from this environment into another one.

Usage (with the python of the environment that has the dependencies installed)::

    python link_dependencies.py WHEEL DESTINATION_SITE_PACKAGES

The distributions linked are exactly what the wheel requires without extras: its
``Requires-Dist`` lines, followed transitively through the installed distributions' own
requirements (with the extras each one asks for), each checked against its version
specifier. Each distribution's files come from its ``RECORD``: the files inside
site-packages are hard-linked (copied where the two folders are on different file systems);
scripts outside site-packages (``bin/torchrun`` and the like) are left out, their first line
names this environment's python. A distribution the destination already has in the same
version is kept; in another version (the setuptools of a new venv) it is replaced. Exit 1,
naming it, for a requirement that is not installed here or whose installed version does not
satisfy it.

CI uses it so that the wheel check's fresh environment does not download and unpack the
5.5 GB CUDA build of torch a second time (see wheel_check.sh).
"""

from __future__ import annotations

import email.parser
import importlib.metadata as metadata
import os
import shutil
import sys
import zipfile
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name


def wheel_requirements(wheel: Path) -> list[Requirement]:
    """The ``Requires-Dist`` lines of a wheel's METADATA."""
    with zipfile.ZipFile(wheel) as archive:
        name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        message = email.parser.Parser().parsestr(archive.read(name).decode())
    return [Requirement(line) for line in message.get_all("Requires-Dist") or []]


def _applies(requirement: Requirement, extras: set[str]) -> bool:
    """Whether a requirement holds here when its owner is installed with these extras."""
    if requirement.marker is None:
        return True
    return any(requirement.marker.evaluate({"extra": extra}) for extra in extras | {""})


def closure(requirements: list[Requirement]) -> list[metadata.Distribution]:
    """The installed distributions that these requirements need, transitively."""
    found: dict[str, metadata.Distribution] = {}
    extras_seen: dict[str, set[str]] = {}
    pending = [(requirement, set()) for requirement in requirements]
    while pending:
        requirement, owner_extras = pending.pop()
        if not _applies(requirement, owner_extras):
            continue
        name = canonicalize_name(requirement.name)
        try:
            distribution = found.get(name) or metadata.distribution(requirement.name)
        except metadata.PackageNotFoundError:
            sys.exit(f"{requirement} is required but not installed in {sys.prefix}")
        if not requirement.specifier.contains(distribution.version, prereleases=True):
            sys.exit(f"{requirement} is required but {sys.prefix} has {distribution.version}")
        new_extras = set(requirement.extras) - extras_seen.get(name, set())
        if name in found and not new_extras:
            continue
        found[name] = distribution
        extras_seen.setdefault(name, set()).update(requirement.extras)
        pending += [(Requirement(line), extras_seen[name])
                    for line in distribution.requires or []]
    return list(found.values())


def installed_in(site_packages: Path, name: str) -> metadata.Distribution | None:
    """The distribution ``name`` as the destination has it, if it has it."""
    return next((d for d in metadata.distributions(path=[str(site_packages)])
                 if canonicalize_name(d.metadata["Name"]) == canonicalize_name(name)), None)


def remove(distribution: metadata.Distribution, site_packages: Path) -> None:
    """Delete an installed distribution's files from site-packages (and the folders that this
    leaves empty), as pip does before it installs another version."""
    folders = set()
    for file in distribution.files or []:
        path = site_packages / file
        if file.parts[0] != ".." and (path.is_file() or path.is_symlink()):
            path.unlink()
            folders.update(path.parents)
    for folder in sorted(folders, key=lambda f: len(f.parts), reverse=True):
        if folder.is_relative_to(site_packages) and folder != site_packages and \
                folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()


def link(distribution: metadata.Distribution, site_packages: Path) -> tuple[int, int, bool]:
    """Hard-link (or copy) one distribution's site-packages files; (files, bytes, copied)."""
    if distribution.files is None:
        sys.exit(f"{distribution.metadata['Name']} has no RECORD: cannot tell its files")
    source_root = Path(distribution.locate_file(""))
    count = size = 0
    copied = False
    for file in distribution.files:
        if file.parts[0] == "..":
            continue
        source, target = source_root / file, site_packages / file
        if not source.is_file():
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(source, target)
        except OSError:
            shutil.copy2(source, target)
            copied = True
        count += 1
        size += source.stat().st_size
    return count, size, copied


def main(arguments: list[str]) -> None:
    if len(arguments) != 2:
        sys.exit(__doc__.split("\n\n")[1])
    wheel, site_packages = Path(arguments[0]), Path(arguments[1])
    files = size = 0
    copied = False
    for distribution in sorted(closure(wheel_requirements(wheel)),
                               key=lambda d: canonicalize_name(d.metadata["Name"])):
        name = distribution.metadata["Name"]
        there = installed_in(site_packages, name)
        if there is not None and there.version == distribution.version:
            print(f"  kept {name} {there.version} (already there)")
            continue
        if there is not None:
            print(f"  replaced {name} {there.version}")
            remove(there, site_packages)
        count, nbytes, was_copied = link(distribution, site_packages)
        files, size, copied = files + count, size + nbytes, copied or was_copied
        print(f"  {distribution.metadata['Name']} {distribution.version}")
    how = "copied (another file system)" if copied else "hard-linked"
    print(f"{files} files, {size / 1e9:.2f} GB, {how} from {sys.prefix} to {site_packages}")


if __name__ == "__main__":
    main(sys.argv[1:])
