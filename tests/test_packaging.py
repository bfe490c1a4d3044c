"""Packaging: the library's runtime requirements are what it imports, and the tools around it
(DVC) are extras; torch is a range there and one pin in the install commands; the license, the
citation of both papers and the console scripts are in place; constraints.txt pins what the
install resolves, inside pyproject.toml's ranges. The transformers floor is checked
by `make test-floor`, which runs the tests that touch Hugging Face against the oldest version
pyproject.toml allows."""

import ast
import importlib
import re
import tomllib
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.version import Version

ROOT = Path(__file__).resolve().parent.parent
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
IMPORT_NAMES = {"pyyaml": "yaml", "ipykernel": "ipykernel", "nbconvert": "nbconvert"}  # distribution -> module


def distribution(requirement: str) -> str:
    return re.match(r"[A-Za-z0-9_.\-]+", requirement).group(0).lower()


def imported_by_the_library() -> set[str]:
    """Top-level modules that any file of `cod/` imports."""
    names = set()
    for path in (ROOT / "cod").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names.add(node.module.split(".")[0])
    return names


def test_dvc_is_an_extra_that_only_cod_pipeline_imports_when_it_runs():
    """The library works without DVC: only cod.pipeline (which runs dvc.yaml's stages) imports it,
    inside the functions that read dvc.yaml and write dvc.lock, never at module level."""
    core = {distribution(r) for r in PROJECT["dependencies"]}
    assert "dvc" not in core
    importers = {}
    for path in (ROOT / "cod").rglob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "dvc" or \
                    isinstance(node, ast.Import) and any(a.name.split(".")[0] == "dvc" for a in node.names):
                importers.setdefault(path.relative_to(ROOT).as_posix(), []).append(node in tree.body)
    assert importers == {"cod/pipeline/runner.py": [False, False]}
    assert any(distribution(r) == "dvc" for r in PROJECT["optional-dependencies"]["pipeline"])
    assert "pipeline" in (ROOT / "Makefile").read_text().split(" -e ")[1].splitlines()[0]


def test_every_core_dependency_is_used():
    """Imported by the library, or the kernel and renderer the notebook runner starts."""
    imported = imported_by_the_library()
    for requirement in PROJECT["dependencies"]:
        name = distribution(requirement)
        module = IMPORT_NAMES.get(name, name.replace("-", "_"))
        assert module in imported or name in ("ipykernel",), f"{requirement} is required but never imported"


def test_license_and_citation_parse_and_cite_both_papers():
    assert (ROOT / "LICENSE").read_text().startswith("MIT License\n\nCopyright (c) 2026 the cod authors\n")
    assert PROJECT["license"] == "MIT" and all((ROOT / name).is_file() for name in PROJECT["license-files"])
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert cff["cff-version"] == "1.2.0" and cff["type"] == "software" and cff["license"] == "MIT"
    assert cff["message"] and cff["title"] and cff["authors"] and cff["version"] == PROJECT["version"]
    papers = {ref["title"]: ref for ref in cff["references"]}
    assert set(papers) == {"The Curse of Depth in Large Language Models",
                           "When Does Sparsity Mitigate the Curse of Depth in LLMs"}
    for ref in papers.values():
        assert ref["type"] and ref["year"] and all(a["family-names"] and a["given-names"] for a in ref["authors"])


@pytest.mark.parametrize("script", sorted(PROJECT["scripts"]))
def test_every_console_script_is_a_command_line_that_answers_help(script, capsys):
    module, function = PROJECT["scripts"][script].split(":")
    with pytest.raises(SystemExit) as exit_info:
        getattr(importlib.import_module(module), function)(["--help"])
    assert exit_info.value.code == 0 and "usage:" in capsys.readouterr().out


def test_torch_is_a_range_for_the_package_and_one_pin_for_the_install():
    """An exact pin in the library would refuse every other torch (the lent GPU's included); the
    install commands pin the version the results were made with, all the same one."""
    (torch,) = [r for r in PROJECT["dependencies"] if distribution(r) == "torch"]
    assert re.fullmatch(r"torch>=[\d.]+", torch)
    installs = "".join((ROOT / name).read_text() for name in ("Makefile", "environment.yml", "README.md"))
    assert len(set(re.findall(r"torch==([\d.]+)", installs))) == 1


def test_the_install_constraints_pin_once_inside_the_ranges_and_leave_torch_and_the_registry_packages_alone():
    """`make install` resolves with constraints.txt; a pin outside a range of pyproject.toml would
    make every fresh install fail, and torch and the registry packages are pinned where they install."""
    pins = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        if line and not line.startswith("#"):
            name, version = line.split("==")
            assert distribution(name) not in pins, f"{name} pinned twice"
            pins[distribution(name)] = Version(version)
    assert "torch" not in pins and "cod" not in pins
    offline = {distribution(line) for line in (ROOT / "requirements-offline.txt").read_text().splitlines()
               if line and not line.startswith("#")}
    assert not offline & set(pins)
    requirements = [Requirement(r) for r in PROJECT["dependencies"]]
    requirements += [Requirement(r) for extra in PROJECT["optional-dependencies"].values() for r in extra]
    for requirement in requirements:
        name = distribution(requirement.name)
        if name != "torch":
            assert name in pins, f"{name} is required but constraints.txt does not pin it"
            assert requirement.specifier.contains(pins[name], prereleases=True), f"{name}=={pins[name]} vs {requirement}"
    makefile = (ROOT / "Makefile").read_text()
    assert "-c constraints.txt" in makefile and "constraints.txt" in makefile.split(".installed:")[1].splitlines()[0]
