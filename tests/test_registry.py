"""The claims registry: it loads, covers every committed claim id, reads the papers right."""

import json
from pathlib import Path

import pytest
import yaml

from cod.claims.registry import (DEFAULT_PATH, ClaimEntry, RegistryError, definitions, departures, headline_claims,
                                 load_registry, our_readings, paper_claims, parse_claim)

ROOT = Path(__file__).resolve().parents[1]

# The papers' tables, typed in from the papers (paper A's cells: arXiv v5) and paper B's text.
A_TABLE1 = {"130M": {"Post-LN": 26.95, "DeepNorm": 27.17, "Mix-LN": 26.07, "Pre-LN": 26.73, "LNS": 25.76},
            "250M": {"Post-LN": 1409.79, "DeepNorm": 22.77, "Mix-LN": 21.39, "Pre-LN": 21.92, "LNS": 20.35},
            "350M": {"Post-LN": 1368.33, "DeepNorm": 1362.59, "Mix-LN": 1363.21, "Pre-LN": 19.58, "LNS": 18.20},
            "1B": {"Post-LN": 1390.75, "DeepNorm": 1409.08, "Mix-LN": 1414.78, "Pre-LN": 17.02, "LNS": 15.71}}
A_TABLE2_AVG = {"250M": {"Post-LN": 32.54, "DeepNorm": 35.63, "Mix-LN": 41.34, "Pre-LN": 36.93, "LNS": 43.14}}
A_TABLE3 = {"OLMo scaled init": (2.96, 19.30), "LNS": (2.85, 17.28)}  # (training loss, perplexity)
A_TABLE5 = {"none": 67.91, "after LN": 66.43, "after Attn/MLP": 68.75}
A_TABLE6 = {"130M": {"Pre-LN": 26.73, "LayerScale": 27.93, "SkipInit": 27.41, "Depth-Scaled Init": 26.95,
                     "Scaled Init": 26.04, "LNS": 25.76, "LNS + Scaled Init": 25.80},
            "250M": {"Pre-LN": 21.92, "LayerScale": 23.45, "SkipInit": 22.29, "Depth-Scaled Init": 21.50,
                     "Scaled Init": 20.98, "LNS": 20.35, "LNS + Scaled Init": 20.79}}
A_TABLE7 = {"Pre-LN": 26.73, "Admin": 27.91, "Group-LN": 28.01, "Sandwich-LN": 26.51, "Mix-LN": 26.07, "LNS": 25.76}
A_TABLE8 = {"Pre-LN": 26.73, "before LN": 26.97, "after Attn/FFN": 26.53, "after residual": 1358.11,
            "only after Attn": 26.89, "only after FFN": 26.43, "after LN (LNS)": 25.76}
# paper B: rung -> (perplexity, causal, permutation, usefulness)
B_TABLE2 = {"lambda=0": (15.63, 0.25, 0.41, 0.75), "lambda=0.01": (15.20, 0.26, 0.42, 0.75),
            "lambda=0.1": (14.83, 0.31, 0.52, 0.81), "lambda=1": (15.55, 0.20, 0.50, 0.69),
            "lambda=3": (773.42, 0.03, 0.07, 0.63)}
B_TABLE3 = {"T=256": (18.51, 0.24, 0.41, 0.69), "T=512": (15.71, 0.25, 0.45, 0.75),
            "T=1024": (14.77, 0.28, 0.46, 0.75), "T=2048": (14.51, 0.30, 0.50, 0.81),
            "T=4096": (14.52, 0.31, 0.81, 0.81), "T=8192": (16.30, 0.29, 0.49, 0.75)}
B_TABLE4 = {"G=1 (MHA)": (14.52, 0.31, 0.51, 0.81), "G=4 (GQA)": (14.50, 0.31, 0.57, 0.87),
            "G=16 (MQA)": (14.47, 0.34, 0.63, 0.87)}
B_TABLE5 = {"Dense-400M": (17.56, 0.30, 0.54, 0.87), "MoE-2B-A400M": (15.89, 0.36, 0.59, 0.94),
            "Dense-1B": (14.52, 0.31, 0.51, 0.81), "MoE-7B-A1B": (13.82, 0.34, 0.61, 0.94)}
# paper B Table 1: depth -> (E, W, perplexity, MMLU, ARC-C, ARC-E, HellaSwag)
B_TABLE1 = {12: (12, 0, 13.72, 24.20, 30.89, 58.96, 47.24), 16: (13, 3, 13.65, 25.20, 31.72, 60.45, 47.24),
            24: (15, 9, 13.53, 26.39, 32.59, 61.24, 47.50), 32: (18, 14, 13.47, 27.52, 34.22, 61.74, 48.63)}
SCORES = ("validation perplexity", "causal score", "permutation score", "usefulness score")


@pytest.fixture(scope="module")
def registry() -> dict[str, ClaimEntry]:
    return load_registry()


def committed_claims(profiles: tuple[str, ...] = ("default",)) -> dict[str, tuple[str, dict]]:
    """id -> (notebook, row) of every claim in the committed figures/<profile>/<notebook>/claims.json of `profiles`."""
    found = {}
    for profile in profiles:
        for path in sorted((ROOT / "figures" / profile).glob("*/claims.json")):
            if path.parent.name == "claims":  # the closing notebook's gathered table, not a notebook's own
                continue
            for row in json.loads(path.read_text()):
                known = found.get(row["id"])
                assert known is None or known[0] == path.parent.name, f"claim id {row['id']} written by two notebooks"
                found[row["id"]] = (path.parent.name, row)
    return found


def test_registry_loads_and_splits(registry):
    assert registry, "empty registry"
    mine, theirs = our_readings(registry), paper_claims(registry)
    assert mine and theirs and len(mine) + len(theirs) == len(registry) and not set(mine) & set(theirs)
    for entry in registry.values():
        assert (entry.why_ours is not None) == entry.ours
        assert (entry.check == "NOT IN PAPER") == entry.ours, entry.id


def test_every_committed_claim_is_registered_and_back(registry):
    committed = committed_claims(("default", "headline"))  # a claim judged at the headline profile only counts too
    assert set(committed) - set(registry) == set(), "claims.json ids missing from the registry"
    orphans = {id_ for id_, entry in registry.items() if id_ not in committed and not entry.planned}
    assert orphans == set(), "registry entries no notebook writes (mark them planned: true)"
    for id_, (notebook, row) in committed.items():
        entry = registry[id_]
        assert not entry.planned, f"{id_} is committed but still marked planned"
        assert (entry.notebook, entry.paper) == (notebook, row["paper"]), id_


def test_runs_name_committed_runs(registry):
    """A judged claim names committed runs of some profile; a planned one, variants params.yaml declares."""
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    declared = {(name, variant) for section in ("experiments", "headline_experiments")
                for name, spec in (params.get(section) or {}).items() for variant in spec["variants"]}
    for entry in registry.values():
        for run in entry.runs:
            if not run.startswith(("model:", "sim:")):
                experiment, variant = run.split("/")
                if entry.planned:
                    assert (experiment, variant) in declared, f"{entry.id}: {run} is not declared in params.yaml"
                    continue
                seeds = (ROOT / "runs").glob(f"*/{experiment}/{variant}_s*")
                assert any(seeds), f"{entry.id}: no committed run {run}"


def test_mix_ln_reads_lower_than_pre_ln(registry):
    for size in ("130M", "250M"):
        entry = registry[f"a5-mix-ln-vs-pre-ln-{size.lower()}"]
        assert entry.direction.startswith("lower for Mix-LN")
        assert entry.paper_numbers[f"Mix-LN @{size}"] < entry.paper_numbers[f"Pre-LN @{size}"]
        assert "worse" not in entry.claim.lower()


def test_a10_threshold_names_its_scale(registry):
    for size in ("130m", "250m"):
        entry = registry[f"a10-lns-above-threshold-{size}"]
        assert "min-max" in entry.metric and "arccos/pi" in entry.claim
        assert entry.paper_numbers["threshold on the per-model min-max scaled distance"] == 0.6
        assert entry.ours == (size == "250m")


def test_b3_claims_resting_on_the_decay_mapping_are_ours(registry):
    """The paper's claims are judged on its own lambda values; the decay-matched rungs (wd20, wd60), which stand for
    its lambda = 3 only through cod's mapping (definition weight_decay_mapping), enter readings of ours alone."""
    matched = {"b_weight_decay/wd20", "b_weight_decay/wd60"}
    mapped = registry["b3-variance-falls-with-lambda:matched-decay"]
    assert matched <= set(mapped.runs) and mapped.ours
    for id_, entry in registry.items():
        if entry.notebook == "b3_weight_decay":
            assert entry.runs, id_
            assert entry.ours or not matched & set(entry.runs), f"{id_} rests on the mapping, tallied as the paper's"
    for lam in ("20", "60"):
        collapse = registry[f"b3-collapse-at-matched-decay:{lam}"]
        assert collapse.ours and "weight_decay_mapping" in collapse.why_ours and set(collapse.runs) <= set(mapped.runs)
    numbers = definitions()["weight_decay_mapping"].numbers
    assert numbers == {f"paper decay exponent per unit lambda ({end})": value for end, value in (("low", 2.1), ("high", 6.3))}


def test_premises_margins_and_free_choices_are_fixed_in_the_registry(registry):
    growth = registry["a4-lns-suppresses-growth"]
    assert "not above its value after warmup" in growth.premise and "a4-deep-variance-grows" in growth.premise
    assert not registry["a4-lns-caps-variance"].premise  # the level at the end is judged as it stands
    assert registry["a11-after-branch-caps-variance"].premise
    for size in ("130m", "250m"):
        deepnorm = registry[f"a5-deepnorm-vs-pre-ln-{size}"]
        assert deepnorm.margin == pytest.approx(A_TABLE1["250M"]["DeepNorm"] / A_TABLE1["250M"]["Pre-LN"], abs=5e-4)
        assert "comparabl" in deepnorm.claim
    assert registry["a4-shallow-flat"].free_choices["shallow_layers"].value == 4
    assert registry["a4-shallow-flat"].free_choices["shallow_layers"].neighbours == (3, 5)
    for entry in registry.values():
        for name, choice in (entry.free_choices or {}).items():
            assert choice.value not in choice.neighbours and choice.why, (entry.id, name)
        assert entry.margin is None or entry.margin > 1, entry.id


def test_a_malformed_premise_margin_or_free_choice_is_rejected():
    good = yaml.safe_load(DEFAULT_PATH.read_text())["claims"]["a8-admin-worse"]
    with pytest.raises(RegistryError, match="'margin' must be a positive number"):
        parse_claim("x", {**good, "margin": -1})
    with pytest.raises(RegistryError, match="'premise' must be a non-empty string"):
        parse_claim("x", {**good, "premise": ""})
    with pytest.raises(RegistryError, match="free choice 'k': 'neighbours' must be a non-empty list of values other"):
        parse_claim("x", {**good, "free_choices": {"k": {"value": 4, "neighbours": [4], "why": "a third"}}})
    with pytest.raises(RegistryError, match="free choice 'k': missing key 'why'"):
        parse_claim("x", {**good, "free_choices": {"k": {"value": 4, "neighbours": [3]}}})


def test_malformed_entries_are_rejected_with_the_key():
    good = yaml.safe_load(DEFAULT_PATH.read_text())["claims"]["a8-admin-worse"]
    assert parse_claim("x", dict(good)).ours is False
    with pytest.raises(RegistryError, match=r"claim 'x': unknown key 'colour'; allowed: notebook, paper"):
        parse_claim("x", {**good, "colour": "red"})
    with pytest.raises(RegistryError, match=r"missing key 'metric'"):
        parse_claim("x", {k: v for k, v in good.items() if k != "metric"})
    with pytest.raises(RegistryError, match=r"'paper' must be one of A, B"):
        parse_claim("x", {**good, "paper": "C"})
    with pytest.raises(RegistryError, match=r"'ours' must be true or false"):
        parse_claim("x", {**good, "ours": "no"})
    with pytest.raises(RegistryError, match=r"'why_ours' must be given if and only if"):
        parse_claim("x", {**good, "ours": True})
    with pytest.raises(RegistryError, match=r"'why_ours' must be given if and only if"):
        parse_claim("x", {**good, "why_ours": "because"})
    with pytest.raises(RegistryError, match=r"must say 'qualitative'"):
        parse_claim("x", {**good, "paper_numbers": None})
    with pytest.raises(RegistryError, match=r"'headline' must be true or false, got 'yes'"):
        parse_claim("x", {**good, "headline": "yes"})


def test_the_headline_claims_cover_the_issues_questions(registry):
    """Both papers' headline questions: LNS against Pre-LN (Table 1), Figs. 4 and 7, Table 6; paper B's
    depth ladder and each sparsity source, every one a claim the papers make."""
    headline = headline_claims(registry)
    assert all(not entry.ours for entry in headline.values())
    items = {(entry.paper, entry.item.split(" (")[0]) for entry in headline.values()}
    assert {("A", "Table 1"), ("A", "Fig. 4"), ("A", "Fig. 7"), ("A", "Table 6"), ("B", "Fig. 2a"), ("B", "Table 1"),
            ("B", "Table 2"), ("B", "Table 3"), ("B", "Table 4"), ("B", "Table 5"), ("B", "Fig. 1")} <= items
    assert not headline_claims({"x": parse_claim("x", {**yaml.safe_load(DEFAULT_PATH.read_text())["claims"]
                                                       ["a8-admin-worse"]})})


def test_load_registry_names_the_bad_entry(tmp_path):
    document = yaml.safe_load(DEFAULT_PATH.read_text())
    document["claims"]["a8-admin-worse"]["verdict"] = "reproduced"
    path = tmp_path / "registry.yaml"
    path.write_text(yaml.safe_dump(document))
    with pytest.raises(RegistryError, match=r"claim 'a8-admin-worse': unknown key 'verdict'"):
        load_registry(path)


def test_a_planned_entry_needs_no_committed_claim(tmp_path):
    document = yaml.safe_load(DEFAULT_PATH.read_text())
    document["claims"]["a8-future"] = {**document["claims"]["a8-admin-worse"], "planned": True}
    path = tmp_path / "registry.yaml"
    path.write_text(yaml.safe_dump(document))
    assert load_registry(path)["a8-future"].planned


def test_a_reading_tests_a_registered_paper_claim_that_its_departure_bears_on(tmp_path):
    """`tests` names a claim of the papers, only on a reading of ours; a departure's `tested_by` readings
    test claims of its `bears_on` (what lets the report put each test under the claim it explains)."""
    document = yaml.safe_load(DEFAULT_PATH.read_text())
    path = tmp_path / "registry.yaml"
    reading = document["claims"]["h2-released-fig4-growth"]
    assert load_registry()["h2-released-fig4-growth"].tests == "a4-deep-variance-grows"
    for bad in ("no-such-claim", "h2-released-fig4-level"):  # unknown; a reading of ours, not the paper's claim
        document["claims"]["h2-released-fig4-growth"] = {**reading, "tests": bad}
        path.write_text(yaml.safe_dump(document))
        with pytest.raises(RegistryError, match="'tests' must name a registered claim of the papers"):
            load_registry(path)
    document["claims"]["h2-released-fig4-growth"] = reading
    document["claims"]["h2-horizon-fig4-growth"]["tests"] = "a10-drop-deep-130m"  # a claim 'schedule' does not bear on
    path.write_text(yaml.safe_dump(document))
    with pytest.raises(RegistryError, match=r"departure 'schedule'.*not: \['h2-horizon-fig4-growth'\]"):
        departures(path)


def expected_number(entry: ClaimEntry, key: str) -> float | None:
    """The hard-coded paper value behind `key` of `entry`, or None for an item not spot-checked here."""
    metric, item, paper = entry.metric, entry.item, entry.paper
    row, _, size = key.partition(" @")
    if paper == "A":
        if item == "Table 1":
            return A_TABLE1[size][row]
        if item == "Table 2":
            return A_TABLE2_AVG[size][row]
        if item == "Table 3":
            return A_TABLE3[key][0 if metric.startswith("final training loss") else 1]
        if item == "Table 5":
            return A_TABLE5[key]
        if item == "Table 6":
            return A_TABLE6[size][row]
        if item == "Table 7":
            return A_TABLE7[key]
        if item == "Table 8":
            return A_TABLE8[key]
        return None
    if item == "Table 1":
        e, w, ppl, *accuracies = B_TABLE1[int(key.removeprefix("L="))]
        for prefix, value in (("validation perplexity", ppl), ("usefulness score", e / (e + w)),
                              ("wasted layers", w), ("effective layers", e),
                              ("mean zero-shot accuracy", sum(accuracies) / len(accuracies))):
            if metric.startswith(prefix):
                return value
        raise AssertionError(f"{entry.id}: no Table 1 column for metric {metric!r}")
    tables = {"Table 2": B_TABLE2, "Table 3": B_TABLE3, "Table 4": B_TABLE4, "Table 5": B_TABLE5}
    if item not in tables:
        return None
    column = next(i for i, name in enumerate(SCORES) if metric.startswith(name))
    return tables[item][key][column]


def test_paper_numbers_agree_with_the_papers_tables(registry):
    checked = set()
    for entry in registry.values():
        for key, value in (entry.paper_numbers or {}).items():
            expected = expected_number(entry, key)
            if expected is not None:
                assert value == pytest.approx(expected, abs=1e-6), f"{entry.id}: {key} = {value}, paper {expected}"
                checked.add((entry.paper, entry.item))
    must = {("A", "Table 1"), ("A", "Table 6"), ("A", "Table 7"), ("A", "Table 8")} | {
        ("B", f"Table {n}") for n in range(1, 6)}
    assert must <= checked, f"tables never checked: {sorted(must - checked)}"


def test_definitions(registry):
    defs = definitions()
    assert set(defs) == {"admin", "group_ln", "moe_balance_loss", "lns_single_branch", "usefulness",
                         "usefulness_authors", "weight_decay_mapping"}
    assert defs["admin"].departs and defs["group_ln"].departs and not defs["moe_balance_loss"].departs
    assert defs["usefulness"].departs and "transpose" in defs["usefulness"].source  # the authors' script, not the paper
    for definition in defs.values():
        assert definition.ours and definition.source and definition.why


def test_the_library_page_states_every_definition_against_its_source():
    library = (Path(__file__).resolve().parent.parent / "docs" / "library.md").read_text()
    section = library.split("## Definitions that interpret their sources", 1)[1].split("\n## ", 1)[0]
    for name, definition in definitions().items():
        line = next(line for line in section.splitlines() if f"**`{name}`**" in line)
        assert ("(departs)" in line) == definition.departs, name
