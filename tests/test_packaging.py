"""Dependencies: the library's runtime requirements are what it imports, and the tools around it
(DVC) are extras. The transformers floor is checked by `make test-floor`, which runs the tests
that touch Hugging Face against the oldest version pyproject.toml allows."""

import ast
import re
import tomllib
from pathlib import Path

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


def test_dvc_is_an_extra_and_the_library_never_imports_it():
    core = {distribution(r) for r in PROJECT["dependencies"]}
    assert "dvc" not in core and "dvc" not in imported_by_the_library()
    assert any(distribution(r) == "dvc" for r in PROJECT["optional-dependencies"]["pipeline"])
    assert "pipeline" in (ROOT / "Makefile").read_text().split("pip install --quiet -e")[1].splitlines()[0]


def test_every_core_dependency_is_used():
    """Imported by the library, or the kernel and renderer the notebook runner starts."""
    imported = imported_by_the_library()
    for requirement in PROJECT["dependencies"]:
        name = distribution(requirement)
        module = IMPORT_NAMES.get(name, name.replace("-", "_"))
        assert module in imported or name in ("ipykernel",), f"{requirement} is required but never imported"
