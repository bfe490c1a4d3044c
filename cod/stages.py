"""The `cod` files each notebook stage of dvc.yaml depends on, derived from the notebook's imports.

    python -m cod.stages           # print the notebook stages whose deps miss a module they reach
    python -m cod.stages --write   # rewrite those deps in dvc.yaml (other deps are kept as they are)

A notebook depends on every `cod` module it reaches through module-level imports, its own and
those of the modules it imports (an import inside a function runs only when that function does,
and is not followed), and on a module's own data file beside it (cod/registry.yaml). A
subpackage reached whole is listed as its folder. So changing the verdict
rule, a loader or a plot helper marks exactly the notebooks that use it stale.
"""

from __future__ import annotations

import argparse
import ast
import functools
import re
import sys
from pathlib import Path

import yaml

from cod import ROOT


def module_path(module: str) -> Path:
    """The file of a `cod` module (a package's __init__.py)."""
    path = ROOT / Path(*module.split("."))
    return path / "__init__.py" if path.is_dir() else path.with_suffix(".py")


def imported(node: ast.Import | ast.ImportFrom, package: str = "cod") -> set[str]:
    """The `cod` modules one import statement names (`from cod import plots` names cod.plots; a
    relative import is resolved against `package`)."""
    found = set()
    if isinstance(node, ast.Import):
        found |= {alias.name for alias in node.names if alias.name.split(".")[0] == "cod"}
    else:
        module = node.module or ""
        if node.level:
            module = ".".join([*package.split(".")[: len(package.split(".")) - node.level + 1], *filter(None, [module])])
        if module.split(".")[0] == "cod":
            found.add(module)
            found |= {f"{module}.{alias.name}" for alias in node.names if module_path(f"{module}.{alias.name}").exists()}
    return {m for m in found if module_path(m).exists()}


def cod_imports(source: str, package: str = "cod") -> set[str]:
    """The `cod` modules a piece of Python imports at module level (`imported`)."""
    return {module for node in ast.parse(source).body if isinstance(node, (ast.Import, ast.ImportFrom))
            for module in imported(node, package)}


@functools.cache
def _module_imports(module: str) -> frozenset[str]:
    path = module_path(module)
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    return frozenset(cod_imports(path.read_text(), package))


def reached(source: str) -> set[str]:
    """Every `cod` module reachable from `source` through module-level imports."""
    todo, seen = cod_imports(source), set()
    while todo:
        module = todo.pop()
        seen.add(module)
        todo |= _module_imports(module) - seen
    return seen


def notebook_deps(name: str) -> list[str]:
    """The `cod` files and folders notebook `name` depends on: a subpackage whose every module is
    reached is named by its folder."""
    paths = [module_path(m) for m in reached((ROOT / "notebooks" / f"{name}.py").read_text())]
    paths += [p.with_suffix(".yaml") for p in paths if p.with_suffix(".yaml").exists()]  # a module's own data
    files = {p.relative_to(ROOT).as_posix() for p in paths} - {"cod/__init__.py"}
    for package in sorted(p for p in (ROOT / "cod").iterdir() if (p / "__init__.py").exists()):
        members = {f.relative_to(ROOT).as_posix() for f in package.glob("*.py")}
        inside = {f for f in files if f.startswith(f"cod/{package.name}/")}
        if inside and inside >= members - {f"cod/{package.name}/__init__.py"}:
            files = (files - members) | {f"cod/{package.name}"}
    return sorted(files)


def notebook_stages(dvc_file: Path = ROOT / "dvc.yaml") -> dict[str, dict]:
    """The stages of dvc.yaml that execute a notebook, by name."""
    stages = yaml.safe_load(dvc_file.read_text())["stages"]
    return {name: stage for name, stage in stages.items() if "cod.notebook" in str(stage.get("cmd", ""))}


def stale_deps(dvc_file: Path = ROOT / "dvc.yaml") -> dict[str, tuple[list[str], list[str]]]:
    """{stage: (cod deps it lists, cod deps it should list)} for the notebook stages that differ."""
    out = {}
    for name, stage in notebook_stages(dvc_file).items():
        listed = [d for d in stage.get("deps", []) if str(d) == "cod" or str(d).startswith("cod/")]
        wanted = notebook_deps(name)
        if sorted(listed) != wanted:
            out[name] = (listed, wanted)
    return out


def write_deps(dvc_file: Path = ROOT / "dvc.yaml") -> list[str]:
    """Rewrite the `cod` deps of every stale notebook stage in `dvc_file` (text edit: comments and
    other deps stay); the names of the stages rewritten."""
    text = dvc_file.read_text()
    changed = stale_deps(dvc_file)
    for name, (_, wanted) in changed.items():
        block = re.search(rf"^  {re.escape(name)}:.*?\n(?=  \S|\Z)", text, flags=re.S | re.M)
        deps = re.search(r"^    deps:\n((?:      - .*\n)+)", block.group(0), flags=re.M)
        kept = [line for line in deps.group(1).splitlines(keepends=True)
                if not re.match(r"      - cod(/|\s|$)", line)]
        new_deps = "    deps:\n" + "".join(kept) + "".join(f"      - {dep}\n" for dep in wanted)
        new_block = block.group(0).replace(deps.group(0), new_deps)
        text = text.replace(block.group(0), new_block)
    dvc_file.write_text(text)
    return sorted(changed)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m cod.stages", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--write", action="store_true", help="rewrite the stale deps in dvc.yaml")
    args = parser.parse_args(argv)
    if args.write:
        print("rewritten:", ", ".join(write_deps()) or "none")
        return 0
    stale = stale_deps()
    for name, (listed, wanted) in stale.items():
        print(f"{name}: lists {listed}, reaches {wanted}")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
