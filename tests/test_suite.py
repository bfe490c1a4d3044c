"""The test suite's own bookkeeping: the `slow` mark that `make test-fast` leaves out."""

import ast
from pathlib import Path

from conftest import SLOW

TESTS = Path(__file__).resolve().parent


def test_every_test_named_slow_exists():
    """conftest.SLOW names tests by file and function: a renamed or removed test must leave the list too."""
    for entry in SLOW:
        file, name = entry.split("::")
        tree = ast.parse((TESTS / file).read_text())
        functions = {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}
        assert name in functions and name.startswith("test_"), f"conftest.SLOW: {entry} is no test"
    assert len(set(SLOW)) == len(SLOW)
