"""The claims registry (`cod/claims/registry.yaml`): what each judged claim says the PAPER claims.

Every claim id a notebook writes to its claims.json has one entry here, with the paper's item,
a paraphrase of the paper's claim, the paper's numbers, the runs it is judged on, and whether it
is the paper's claim or our own reading (`ours`). An entry may also fix, before any
comparison, what the verdict rule needs beyond the data: the premise a treatment claim rests on
(`premise`), the margin of an equivalence claim (`margin`), and the analysis's free choices with
the neighbouring values its sensitivity pass re-judges the claim at (`free_choices`).
`load_registry` validates the file; `definitions` reads its section on definitions of cod that
interpret or depart from their sources.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from types import MappingProxyType
from typing import Any

from cod import load_yaml

DEFAULT_PATH = Path(__file__).with_name("registry.yaml")
PAPERS = ("A", "B")


class RegistryError(ValueError):
    """A malformed registry entry; the message names the entry and the key."""


@dataclass(frozen=True)
class FreeChoice:
    """A choice of the analysis the paper does not fix (a layer group, a window, a threshold): the
    value the claim is judged at and the neighbouring values its sensitivity pass re-judges it at."""

    value: Any
    neighbours: tuple[Any, ...]
    why: str  # where the value comes from, fixed before any result


@dataclass(frozen=True)
class ClaimEntry:
    """One claim of the registry (see the header of registry.yaml for the fields)."""

    id: str
    notebook: str
    paper: str
    item: str
    claim: str
    where: str
    paper_numbers: Mapping[str, float] | None
    metric: str
    direction: str
    runs: tuple[str, ...]
    ours: bool
    check: str
    why_ours: str | None = None
    note: str | None = None
    planned: bool = False
    headline: bool = False  # one of the papers' headline questions (README's headline table: both CPU profiles)
    premise: str | None = None  # a treatment claim: what the baseline must show first, and the test that shows it
    margin: float | None = None  # an equivalence claim: the largest ratio (> 1) or difference (> 0) still "comparable"
    free_choices: Mapping[str, FreeChoice] | None = None  # the analysis's free choices, by the name the notebook uses
    tests: str | None = None  # a reading of ours that puts a paper claim to another recipe: that claim's id


@dataclass(frozen=True)
class Definition:
    """A definition of cod set against its source: what cod does, what the source says, whether it departs."""

    name: str
    ours: str
    source: str
    departs: bool
    why: str
    numbers: Mapping[str, float] | None = None  # the numbers the definition fixes, for the code that applies it


@dataclass(frozen=True)
class Departure:
    """A place where the authors' released code departs from its paper, checked in their repository."""

    name: str
    paper: str
    says: str  # what the paper says (or leaves unsaid)
    released: str  # what the released code does
    repository: str  # owner/name on GitHub
    commit: str  # where to see it
    file: str
    cod: str  # what cod does
    bears_on: tuple[str, ...]  # claim ids it may explain
    tested_by: tuple[str, ...]  # claim ids (notebooks/h2_departures.py) that put it to a run; empty: none
    untested_why: str | None = None  # with no test: why not


def _keys(cls: type, optional: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(required, allowed) keys of an entry of `cls`, whose `name`/`id` field is the YAML key."""
    names = tuple(f.name for f in fields(cls) if f.name not in ("id", "name"))
    return tuple(n for n in names if n not in optional), names


CLAIM_REQUIRED, CLAIM_ALLOWED = _keys(ClaimEntry, ("why_ours", "note", "planned", "headline", "premise", "margin",
                                                   "free_choices", "tests"))
FREE_CHOICE_KEYS = ("value", "neighbours", "why")
DEFINITION_REQUIRED, DEFINITION_ALLOWED = _keys(Definition, ("numbers",))
DEPARTURE_REQUIRED, DEPARTURE_ALLOWED = _keys(Departure, ("untested_why",))


def _check_keys(where: str, entry: Any, required: tuple[str, ...], allowed: tuple[str, ...]) -> None:
    if not isinstance(entry, Mapping):
        raise RegistryError(f"{where}: expected a mapping, got {type(entry).__name__}")
    for key in entry:
        if key not in allowed:
            raise RegistryError(f"{where}: unknown key {key!r}; allowed: {', '.join(allowed)}")
    for key in required:
        if key not in entry:
            raise RegistryError(f"{where}: missing key {key!r}")


def _text(where: str, key: str, value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise RegistryError(f"{where}: {key!r} must be a non-empty string, got {value!r}")
    return value


def _flag(where: str, key: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise RegistryError(f"{where}: {key!r} must be true or false, got {value!r}")
    return value


def _numbers(where: str, value: Any, key: str = "paper_numbers") -> Mapping[str, float] | None:
    if value is None:
        return None
    if not isinstance(value, Mapping) or not value:
        raise RegistryError(f"{where}: {key!r} must be a non-empty mapping or null, got {value!r}")
    for name, number in value.items():
        if not isinstance(name, str) or isinstance(number, bool) or not isinstance(number, int | float):
            raise RegistryError(f"{where}: {key!r} entry {name!r}: {number!r} is not a number")
    return MappingProxyType({name: float(number) for name, number in value.items()})


def _margin(where: str, value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise RegistryError(f"{where}: 'margin' must be a positive number, got {value!r}")
    return float(value)


def _free_choices(where: str, value: Any) -> Mapping[str, FreeChoice] | None:
    if value is None:
        return None
    if not isinstance(value, Mapping) or not value:
        raise RegistryError(f"{where}: 'free_choices' must be a non-empty mapping of names, got {value!r}")
    choices = {}
    for name, choice in value.items():
        inner = f"{where}: free choice {name!r}"
        _check_keys(inner, choice, FREE_CHOICE_KEYS, FREE_CHOICE_KEYS)
        neighbours = choice["neighbours"]
        if not isinstance(neighbours, list) or not neighbours or choice["value"] in neighbours:
            raise RegistryError(f"{inner}: 'neighbours' must be a non-empty list of values other than "
                                f"{choice['value']!r}, got {neighbours!r}")
        choices[str(name)] = FreeChoice(choice["value"], tuple(neighbours), _text(inner, "why", choice["why"]))
    return MappingProxyType(choices)


def parse_claim(id_: str, entry: Any) -> ClaimEntry:
    """Validate one registry entry and return it as a `ClaimEntry`."""
    where = f"claim {id_!r}"
    _check_keys(where, entry, CLAIM_REQUIRED, CLAIM_ALLOWED)
    text = {key: _text(where, key, entry[key]) for key in
            ("notebook", "paper", "item", "claim", "where", "metric", "direction", "check")}
    if text["paper"] not in PAPERS:
        raise RegistryError(f"{where}: 'paper' must be one of {', '.join(PAPERS)}, got {text['paper']!r}")
    ours = _flag(where, "ours", entry["ours"])
    if ours != ("why_ours" in entry):
        raise RegistryError(f"{where}: 'why_ours' must be given if and only if 'ours' is true")
    runs = entry["runs"]
    if not isinstance(runs, list) or not runs:
        raise RegistryError(f"{where}: 'runs' must be a non-empty list, got {runs!r}")
    numbers = _numbers(where, entry["paper_numbers"])
    if numbers is None and "qualitative" not in text["metric"]:
        raise RegistryError(f"{where}: 'paper_numbers' is null, so 'metric' must say 'qualitative'")
    return ClaimEntry(
        id=id_, **text, paper_numbers=numbers, ours=ours,
        runs=tuple(_text(where, "runs", run) for run in runs),
        why_ours=_text(where, "why_ours", entry["why_ours"]) if ours else None,
        note=_text(where, "note", entry["note"]) if "note" in entry else None,
        planned=_flag(where, "planned", entry.get("planned", False)),
        headline=_flag(where, "headline", entry.get("headline", False)),
        premise=_text(where, "premise", entry["premise"]) if "premise" in entry else None,
        margin=_margin(where, entry.get("margin")),
        free_choices=_free_choices(where, entry.get("free_choices")),
        tests=_text(where, "tests", entry["tests"]) if "tests" in entry else None,
    )


def _read(path: Path) -> Mapping[str, Any]:
    document = load_yaml(path)
    _check_keys(str(path), document, ("claims", "definitions"), ("claims", "definitions", "departures"))
    return document


def load_registry(path: str | Path = DEFAULT_PATH) -> dict[str, ClaimEntry]:
    """Every claim of the registry by id, each validated (`RegistryError` on the first bad entry)."""
    claims = _read(Path(path))["claims"]
    if not isinstance(claims, Mapping):
        raise RegistryError(f"{path}: 'claims' must be a mapping of claim ids")
    parsed = {str(id_): parse_claim(str(id_), entry) for id_, entry in claims.items()}
    for entry in parsed.values():
        if entry.tests is not None and (entry.tests not in parsed or not entry.ours or parsed[entry.tests].ours):
            raise RegistryError(f"claim {entry.id!r}: 'tests' must name a registered claim of the papers, and only a "
                                f"reading of ours tests one; got {entry.tests!r}")
    return parsed


def paper_claims(registry: Mapping[str, ClaimEntry]) -> dict[str, ClaimEntry]:
    """The entries the papers themselves claim."""
    return {id_: entry for id_, entry in registry.items() if not entry.ours}


def headline_claims(registry: Mapping[str, ClaimEntry]) -> dict[str, ClaimEntry]:
    """The entries that answer the papers' headline questions, in registry order."""
    return {id_: entry for id_, entry in registry.items() if entry.headline}


def our_readings(registry: Mapping[str, ClaimEntry]) -> dict[str, ClaimEntry]:
    """The entries that are our readings, which the papers never state (tallied apart)."""
    return {id_: entry for id_, entry in registry.items() if entry.ours}


def definitions(path: str | Path = DEFAULT_PATH) -> dict[str, Definition]:
    """The registry's `definitions` section, validated, by name."""
    section = _read(Path(path))["definitions"]
    if not isinstance(section, Mapping):
        raise RegistryError(f"{path}: 'definitions' must be a mapping of names")
    out = {}
    for name, entry in section.items():
        where = f"definition {name!r}"
        _check_keys(where, entry, DEFINITION_REQUIRED, DEFINITION_ALLOWED)
        out[name] = Definition(name=name, departs=_flag(where, "departs", entry["departs"]),
                               numbers=_numbers(where, entry.get("numbers"), "numbers"),
                               **{key: _text(where, key, entry[key]) for key in ("ours", "source", "why")})
    return out


def departures(path: str | Path = DEFAULT_PATH) -> dict[str, Departure]:
    """The registry's `departures` section, validated, by name: every claim id it names is registered,
    and a departure no run tests says why."""
    document = _read(Path(path))
    claims = set(document["claims"])
    out = {}
    for name, entry in (document.get("departures") or {}).items():
        where = f"departure {name!r}"
        _check_keys(where, entry, DEPARTURE_REQUIRED, DEPARTURE_ALLOWED)
        lists = {}
        for key in ("bears_on", "tested_by"):
            ids = entry[key]
            if not isinstance(ids, list) or any(id_ not in claims for id_ in ids):
                unknown = [id_ for id_ in ids if id_ not in claims] if isinstance(ids, list) else ids
                raise RegistryError(f"{where}: {key!r} must list registered claim ids; not registered: {unknown}")
            lists[key] = tuple(ids)
        wrong = [id_ for id_ in lists["tested_by"] if (document["claims"][id_] or {}).get("tests") not in lists["bears_on"]]
        if wrong:
            raise RegistryError(f"{where}: each claim of 'tested_by' must test (its 'tests') a claim of 'bears_on'; not: {wrong}")
        if not lists["tested_by"] and "untested_why" not in entry:
            raise RegistryError(f"{where}: no claim tests it, so 'untested_why' must say why")
        if entry["paper"] not in PAPERS:
            raise RegistryError(f"{where}: 'paper' must be one of {', '.join(PAPERS)}, got {entry['paper']!r}")
        text = {key: _text(where, key, entry[key]) for key in ("paper", "says", "released", "repository", "commit",
                                                               "file", "cod")}
        why = _text(where, "untested_why", entry["untested_why"]) if "untested_why" in entry else None
        out[name] = Departure(name=name, **text, **lists, untested_why=why)
    return out
