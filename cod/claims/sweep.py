"""Paper A's sweeps (notebooks a5, a7, a8, a9): variants of one experiment side by side, at one size or several.

A sweep is the final results of its rows {label: variant} at each size (`cod.claims.tables.load_sweep`, or
`load_variants` for one experiment: its one size is 130M), failed runs marked. `Sweep` holds what
its notebooks judge and say of them, so that a notebook keeps its parameters, its calls and its prose:

    variants = Sweep(sweep, ROWS, PAPER, Claims("A", profile, seeds))   # PAPER: labels x sizes
    variants = Sweep.judged(sweep, ROWS, PAPER, profile)   # the same, over every seed of the sweep
    variants.perplexities["130M"].ppl["LNS"]   # per-seed perplexity (`cod.claims.tables.Perplexities`)
    variants.mean("LNS", "130M")               # its mean over the seeds that did not fail
    variants.beats("LNS", "Pre-LN", "130M")    # `compare` of "LNS has the lower perplexity", the paper's beside
    variants.add(id_, item, text, paper_value, verdict)   # a claim row; its verdict kept in `verdict_of`
    variants.across_sizes("a7-layerscale-hurts")       # "*reproduced* at 130M, *inconclusive* at 250M"
    variants.lower_or_higher("+ LayerScale")           # "lower", "higher" or "lower at some sizes and higher at others"
    variants.means_against("+ LayerScale", "Pre-LN")   # "130M 28 against 27; 250M 23 against 22"
"""

from __future__ import annotations

import pandas as pd

from cod.claims.tables import Perplexities, perplexities
from cod.claims.verdicts import Claims, Verdict, compare


class Sweep:
    """The rows {label: variant} of `runs` (`load_sweep`'s table: a `size` column, `failed` marked) at
    each of its sizes, the paper's values (`paper`: the rows' labels by sizes as columns) and the
    notebook's `claims`. `beats`'s size defaults to the one size of a single experiment's sweep."""

    def __init__(self, runs: pd.DataFrame, rows: dict[str, str], paper: pd.DataFrame, claims: Claims):
        self.paper, self.claims = paper, claims
        self.sizes = list(runs["size"].unique())  # in the order the runs were loaded
        self.perplexities: dict[str, Perplexities] = {  # size -> each row's perplexity by seed
            size: perplexities(runs[runs["size"] == size], rows) for size in self.sizes}
        self.verdict_of: dict[str, Verdict] = {}  # claim id -> its verdict, in the order added

    @classmethod
    def judged(cls, runs: pd.DataFrame, rows: dict[str, str], paper: pd.DataFrame, profile: str, paper_id: str = "A"):
        """The sweep whose claims are paper `paper_id`'s at `profile`, over every seed of `runs`."""
        return cls(runs, rows, paper, Claims(paper_id, profile, sorted(int(s) for s in runs["seed"].unique())))

    def mean(self, label: str, size: str) -> float:
        """The row's mean perplexity at `size` over the seeds that did not fail."""
        return self.perplexities[size].mean(label)

    def beats(self, a: str, b: str, size: str = "130M") -> Verdict:
        """`compare` of "row a has a lower perplexity than row b" at `size`, paired by seed, the
        paper's a and b beside ours."""
        ppl, paper = self.perplexities[size].ppl, self.paper[size]
        return compare(ppl[a], ppl[b], paper=(paper[a], paper[b]))

    def add(self, id_: str, item: str, text: str, paper_value: str, verdict) -> None:
        """`Claims.add` of the claim, its verdict (a Verdict, a reason it is not judged, or a function
        of the claim's free choices) kept in `verdict_of` for the notebook's text."""
        self.verdict_of[id_] = self.claims.add(id_, item, text, paper_value, verdict)

    def across_sizes(self, stem: str) -> str:
        """The verdicts of the claims STEM-SIZE (the size in lower case) at every size, as a phrase."""
        return ", ".join(f"*{self.verdict_of[f'{stem}-{size.lower()}'].verdict}* at {size}" for size in self.sizes)

    def lower_or_higher(self, label: str, other: str = "Pre-LN", lower: str = "lower", higher: str = "higher") -> str:
        """Where row `label`'s mean perplexity ends against `other`'s: `lower` when below it at every
        size, `higher` when at none, else "`lower` at some sizes and `higher` at others"."""
        below = [self.mean(label, size) < self.mean(other, size) for size in self.sizes]
        return lower if all(below) else higher if not any(below) else f"{lower} at some sizes and {higher} at others"

    def means_against(self, label: str, other: str) -> str:
        """'SIZE a against b' at every size: the two rows' mean perplexities, rounded."""
        return "; ".join(f"{size} {self.mean(label, size):.0f} against {self.mean(other, size):.0f}"
                         for size in self.sizes)
