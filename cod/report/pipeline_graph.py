"""The pipeline graph of docs/pipeline.md: DVC's stage graph as a Mermaid flowchart, each `foreach`
group one node and stages of the same upstream and downstream one node (`cod.report` writes the page).
"""

from __future__ import annotations

import re
import subprocess
import sys

from cod import ROOT


def stage_graph() -> set[tuple[str, str]]:
    """(upstream, downstream) of every edge of DVC's stage graph, a `foreach` group named NAME@*,
    read from `dvc dag --dot` (the pipeline extra's command line: the library never imports dvc)."""
    dot = subprocess.run([sys.executable, "-m", "dvc", "dag", "--dot"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return {(group(a), group(b)) for a, b in re.findall(r'"([^"]+)" -> "([^"]+)"', dot)}


def group(address: str) -> str:
    """The graph node of a stage: `train@a_130m` is `train@*`."""
    return address.split("@")[0] + "@*" if "@" in address else address


def merged_nodes(edges: set[tuple[str, str]]) -> dict[str, tuple[str, ...]]:
    """{stage: the stages drawn as its node}: stages with the same upstream and downstream are one node."""
    stages = sorted({name for edge in edges for name in edge})
    neighbours = {s: (frozenset(a for a, b in edges if b == s), frozenset(b for a, b in edges if a == s))
                  for s in stages}
    return {s: tuple(t for t in stages if neighbours[t] == neighbours[s]) for s in stages}


def mermaid(edges: set[tuple[str, str]]) -> str:
    """A Mermaid flowchart of `edges`, stages of the same neighbours merged (`merged_nodes`)."""
    nodes = merged_nodes(edges)
    index = {members: i for i, members in enumerate(sorted(set(nodes.values())))}
    lines = ["```mermaid", "flowchart LR"]
    lines += [f'  n{i}["{"<br/>".join(members)}"]' for members, i in index.items()]
    lines += [f"  n{a} --> n{b}" for a, b in sorted({(index[nodes[a]], index[nodes[b]]) for a, b in edges})]
    return "\n".join([*lines, "```"]) + "\n"


def graph_block() -> str:
    """The pipeline graph of docs/pipeline.md (`cod.report.docs`), as `mermaid` of `stage_graph`."""
    return mermaid(stage_graph())
