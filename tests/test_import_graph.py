"""The package's imports flow one way: every module of `cod` sits in a layer (`LAYERS`) and imports
only modules of its own layer or lower ones, no module reaches itself through its imports, at
module level or inside functions (importing a submodule runs its package's __init__ first, so
that counts too), and an import inside a function says why it waits: `# lazy: <reason>` on its
line or on a comment line just above it."""

import ast
import re
from pathlib import Path

from cod.pipeline import stages

PACKAGE = stages.ROOT / "cod"
REASON = re.compile(r"#\s*lazy:\s*\S")


def module_name(path: Path) -> str:
    parts = path.relative_to(stages.ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}

# the layers, lowest first: a module prefix (a module, or a package and all below it) in each. Every layer
# above the base is a package of its own, so `ls cod` shows them (test_the_layers_are_the_folders_of_cod)
LAYERS = [
    ("base", ["cod", "cod.paths", "cod.config", "cod.locks", "cod.progress", "cod.png", "cod.plots", "cod.kernel"]),
    ("model", ["cod.model"]),
    ("data, measures, theory", ["cod.data", "cod.metrics", "cod.eval", "cod.theory"]),
    ("records", ["cod.records"]),  # below the trainer, which writes them
    ("train", ["cod.train"]),
    ("runs", ["cod.runs"]),  # the runs params.yaml declares, their cost, their analyses, their curves
    ("claims", ["cod.claims"]),
    ("report", ["cod.report"]),
    ("pipeline", ["cod.pipeline"]),
    ("tools", ["cod.tools"]),
]


def imports(source: str) -> list[tuple[ast.Import | ast.ImportFrom, bool]]:
    """Every import statement of `source`, with whether it sits inside a function."""
    found = []

    def walk(node: ast.AST, inside: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                found.append((child, inside))
            walk(child, inside or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)))

    walk(ast.parse(source), False)
    return found


def graph() -> dict[str, set[str]]:
    """{module: the `cod` modules importing it runs}: those it names and their packages, less the
    packages it sits in (already running when it is imported)."""
    edges = {}
    for name, path in MODULES.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        named = {module for node, _ in imports(path.read_text()) for module in stages.imported(node, package)}
        run = {".".join(module.split(".")[:i]) for module in named for i in range(2, module.count(".") + 2)}
        edges[name] = {module for module in run if not f"{name}.".startswith(f"{module}.")}
    return edges


def circle(edges: dict[str, set[str]]) -> list[str] | None:
    """One circle of `edges` as [a, b, ..., a], or None."""
    done, path = set(), []

    def visit(node: str) -> list[str] | None:
        if node in path:
            return [*path[path.index(node):], node]
        if node in done:
            return None
        path.append(node)
        found = next(filter(None, map(visit, sorted(edges.get(node, ())))), None)
        path.pop()
        done.add(node)
        return found

    return next(filter(None, map(visit, sorted(edges))), None)


def unexplained(source: str) -> list[tuple[int, str]]:
    """(line, statement) of every import inside a function of `source` that gives no reason."""
    lines = ["", *source.splitlines()]  # lines[n] is line n
    return [(node.lineno, ast.unparse(node)) for node, inside in imports(source)
            if inside and not any(REASON.search(line) for line in lines[node.lineno:node.end_lineno + 1])
            and not (lines[node.lineno - 1].lstrip().startswith("#") and REASON.search(lines[node.lineno - 1]))]


def test_no_module_of_cod_reaches_itself_through_its_imports():
    found = circle(graph())
    assert found is None, "import circle: " + " -> ".join(found)


def test_a_circle_is_found_and_named():
    assert circle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == ["a", "b", "c", "a"]
    assert circle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None


def layer(module: str) -> int | None:
    """The layer of `module`: that of its longest prefix in `LAYERS` (`cod` itself names only
    cod/__init__.py); None when none is."""
    found = [(len(prefix), number) for number, (_, prefixes) in enumerate(LAYERS) for prefix in prefixes
             if module == prefix or (prefix != "cod" and module.startswith(f"{prefix}."))]
    return max(found)[1] if found else None


def upward(edges: dict[str, set[str]]) -> list[str]:
    """'a (layer) -> b (layer)' for every import of a module of a higher layer."""
    return [f"{a} ({LAYERS[layer(a)][0]}) -> {b} ({LAYERS[layer(b)][0]})" for a in sorted(edges)
            for b in sorted(edges[a]) if layer(b) > layer(a)]


def test_every_module_of_cod_sits_in_a_layer():
    assert not [name for name in MODULES if layer(name) is None], "modules in no layer of LAYERS"


def test_no_module_imports_a_higher_layer():
    found = upward(graph())
    assert not found, "imports of a higher layer:\n" + "\n".join(found)


def test_a_lower_layer_importing_a_higher_one_is_named():
    assert upward({"cod.config": {"cod.model"}, "cod.model": {"cod.config"}}) == ["cod.config (base) -> cod.model (model)"]
    assert layer("cod") == 0 and layer("cod.train.run") == layer("cod.train") and layer("cod.trainer") is None


def test_importing_a_submodule_runs_its_package_but_not_ones_own():
    edges = graph()
    assert {"cod.data", "cod.data.tasks"} <= edges["cod.train.run"]  # from cod.data.tasks import check_fine_tuning
    assert "cod.eval" not in edges["cod.eval.zeroshot"] and "cod.eval.lm" in edges["cod.eval.zeroshot"]


def test_an_import_inside_a_function_says_why_it_waits():
    found = [f"{path.relative_to(stages.ROOT)}:{line}: {statement}" for path in MODULES.values()
             for line, statement in unexplained(path.read_text())]
    assert not found, "imports inside functions without a `# lazy: <reason>` comment:\n" + "\n".join(found)


def test_the_reason_sits_on_the_import_or_on_a_comment_line_above():
    source = ("import os\n\n\ndef f():\n    import json\n\n\ndef g():\n    # lazy: optional dependency x\n"
              "    import x\n    import y  # lazy: heavy, only for the command line\n    import z\n"
              "    from w import (a,\n                   b)  # lazy: w is slow\n")
    assert unexplained(source) == [(5, "import json"), (12, "import z")]


def test_the_layers_are_the_folders_of_cod():
    """Above the base (configuration, paths and the notebooks' plotting kit, loose in cod/), each layer
    is a package: a module sits in cod/ itself only when the base names it."""
    base = set(LAYERS[0][1])
    loose = [name for name, path in MODULES.items() if path.parent == PACKAGE and name not in base]
    assert not loose, f"modules loose in cod/ but not in the base layer: {loose}"
    packages = {prefix for _, prefixes in LAYERS[1:] for prefix in prefixes}
    assert all((PACKAGE / name.split(".")[1] / "__init__.py").is_file() for name in packages)
