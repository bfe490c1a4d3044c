"""A notebook's parameters and where it writes: what `cod.pipeline.notebook` checks before a run, and what
every notebook calls first, inside its kernel, whoever started it.

    figures_dir = kernel.start("a4_variance_dynamics", profile, figures_dir)

`start` stops the run, in one line, at a parameter papermill injected that the notebook's cell
tagged `parameters` does not declare, or whose value has not its default's type (plain papermill
only warns about an unknown name and runs on the defaults). It returns the folder the notebook
writes its figures, tables and claims.json to: `figures_dir` when given (a DVC stage, through
`cod.pipeline.notebook`, gives figures/<profile>/NAME, the committed folder; `cod.pipeline.notebook --output` the
folder beside its output), else a folder of its own under the system's temporary folder, so that a
notebook run by hand (plain papermill, Jupyter) leaves the committed results alone. Only a run
that writes the committed folder rewrites the README's blocks (`committed`).
"""

from __future__ import annotations

import ast
import tempfile
from pathlib import Path
from typing import Any

from cod import ROOT, load_yaml
from cod.config import ConfigError
from cod.paths import figures_dir

INJECTED = "# Parameters\n"  # how papermill's Python translator opens the cell of the parameters it was given


class ParameterError(ConfigError):
    """A parameter refused inside a notebook: IPython shows it as one line, without a traceback."""

    def _render_traceback_(self) -> list[str]:
        return [f"{type(self).__name__}: {self}"]


def assigned(source: str) -> dict[str, Any]:
    """Names assigned in a cell's `source`, each with its literal value (None where not a literal)."""
    names: dict[str, Any] = {}
    for node in ast.parse(source).body:
        targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
        for target in targets:
            if isinstance(target, ast.Name):
                try:
                    names[target.id] = ast.literal_eval(node.value)
                except ValueError:
                    names[target.id] = None
    return names


def type_name(default: Any) -> str:
    """What a parameter whose default is `default` takes, in words ('float', 'list of str')."""
    if default is None:
        return "any value"
    if isinstance(default, (list, tuple)):
        items = sorted({type_name(item) for item in default})
        return "list" + (f" of {' or '.join(items)}" if items else "")
    return type(default).__name__


def has_default_type(value: Any, default: Any) -> bool:
    """Whether `value` may stand for `default`: a value of its type (an int for a float), a list
    whose items each fit an item of the default list, anything for a default of None."""
    if default is None:
        return True
    if isinstance(default, bool) or isinstance(value, bool):
        return isinstance(default, bool) and isinstance(value, bool)
    if isinstance(default, float):
        return isinstance(value, (int, float))
    if isinstance(default, (list, tuple)):
        return isinstance(value, list) and (not default or all(any(has_default_type(v, d) for d in default)
                                                               for v in value))
    return isinstance(value, type(default))


def checked_parameters(given: dict[str, Any], declared: dict[str, Any], name: str) -> dict[str, Any]:
    """`given` checked against the notebook's `declared` defaults: every name declared, every
    value of its default's type (`has_default_type`; YAML's '1e-3', read as a string, taken as a
    float where a float is expected), `profile` one of params.yaml's. Raises ConfigError naming the first misfit."""
    unknown = sorted(set(given) - set(declared))
    if unknown:
        raise ConfigError(
            f"notebook {name!r} has no parameter {', '.join(map(repr, unknown))}; "
            f"allowed: {', '.join(sorted(declared))}"
        )
    checked = {}
    for key, value in given.items():
        default = declared[key]
        if isinstance(default, float) and isinstance(value, str):
            try:
                value = float(value)
            except ValueError:
                pass
        if not has_default_type(value, default):
            raise ConfigError(f"notebook {name!r}: {key}={value!r} is not allowed; expected {type_name(default)} "
                              f"(the default is {default!r})")
        checked[key] = value
    profiles = load_yaml(ROOT / "params.yaml")["profiles"]
    if "profile" in checked and checked["profile"] not in profiles:
        raise ConfigError(f"notebook {name!r}: profile={checked['profile']!r} is not allowed; "
                          f"allowed: {', '.join(profiles)}")
    return checked


def injected(history: list[str]) -> tuple[list[str], dict[str, Any]] | None:
    """From a kernel's input history (IPython's `In`): the names papermill injected, in its last cell
    of parameters, and the defaults of the cell run before it (the one tagged `parameters`); None when
    papermill injected nothing."""
    for i in range(len(history) - 1, 0, -1):
        if history[i].startswith(INJECTED):
            return list(assigned(history[i])), assigned(history[i - 1])
    return None


def check_injected(name: str) -> None:
    """Raise ParameterError (one line) if papermill gave notebook NAME, run in this IPython kernel, a
    parameter its parameters cell does not declare or a value not of its default's type."""
    try:
        from IPython import get_ipython  # lazy: outside a kernel there is nothing to check
    except ImportError:
        return
    shell = get_ipython()
    found = injected(list(shell.user_ns.get("In", []))) if shell is not None else None
    if found is None:
        return
    names, declared = found
    try:
        checked_parameters({key: shell.user_ns.get(key) for key in names}, declared, name)
    except ConfigError as error:
        raise ParameterError(str(error)) from None


def stage_folder(name: str, profile: str) -> Path:
    """The committed folder of notebook NAME's figures under `profile`: figures/<profile>/NAME."""
    return figures_dir(profile, name, ROOT)


def committed(figures_dir: str | Path, name: str, profile: str) -> bool:
    """Whether `figures_dir` is notebook NAME's committed folder under `profile` (the DVC stage's)."""
    return (ROOT / figures_dir).resolve() == stage_folder(name, profile).resolve()


def start(name: str, profile: str, figures_dir: str | None) -> str:
    """Check papermill's parameters (`check_injected`) and return the folder notebook NAME writes
    to, made if missing: `figures_dir`, else cod-figures/<profile>/NAME under the system's temporary
    folder (a name Python cannot import, so a Python started there still finds the package)."""
    check_injected(name)
    folder = Path(figures_dir) if figures_dir else Path(tempfile.gettempdir()) / "cod-figures" / profile / name
    if not figures_dir:
        print(f"figures_dir not given: figures, tables and claims go to {folder}, not to the committed "
              f"{stage_folder(name, profile).relative_to(ROOT)} (pass figures_dir to write there)")
    folder.mkdir(parents=True, exist_ok=True)
    return str(figures_dir or folder)
