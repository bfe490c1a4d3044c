"""dvc.yaml's notebook stages against what each notebook imports (cod.stages): a stage depends on
every `cod` module its notebook reaches, so changing a module marks exactly its notebooks stale."""

import pytest

from cod import stages

NOTEBOOK_STAGES = stages.notebook_stages()


@pytest.fixture(scope="module")
def stale():
    return stages.stale_deps()


@pytest.mark.parametrize("name", sorted(NOTEBOOK_STAGES))
def test_a_notebook_stage_depends_on_every_cod_module_it_reaches(name, stale):
    assert f"notebooks/{name}.py" in NOTEBOOK_STAGES[name]["deps"]
    assert name not in stale, f"`python -m cod.stages --write` updates dvc.yaml's deps of {name}: {stale.get(name)}"


def test_the_import_walk_follows_modules_through_cod():
    modules = stages.reached("from cod.verdicts import compare\nfrom cod import plots\n")
    assert {"cod.verdicts", "cod.registry", "cod.results", "cod.plots"} <= modules
    assert "cod.train" not in stages.reached("from cod.registry import load_registry\n")
    assert "cod/registry.yaml" in stages.notebook_deps("a4_variance_dynamics")  # the registry's data


def test_relative_imports_resolve_against_their_package():
    assert stages.cod_imports("from .loader import open_tokens\n", "cod.data") == {"cod.data.loader"}
    assert stages.cod_imports("def f():\n    import cod.train\n") == set()  # inside a function: not followed


def test_write_replaces_only_the_cod_deps(tmp_path, monkeypatch):
    dvc = tmp_path / "dvc.yaml"
    dvc.write_text("stages:\n  a4_variance_dynamics:  # Fig. 4\n    cmd: python -m cod.notebook a4_variance_dynamics\n"
                   "    deps:\n      - notebooks/a4_variance_dynamics.py\n      - runs/${profile}/a_130m\n"
                   "      - cod/plots.py\n    params:\n      - profile\n")
    assert stages.write_deps(dvc) == ["a4_variance_dynamics"]
    text = dvc.read_text()
    assert "# Fig. 4" in text and "runs/${profile}/a_130m" in text and "params:\n      - profile" in text
    assert stages.stale_deps(dvc) == {}
