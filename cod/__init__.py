"""cod: the curse of depth, reproduced (README.md).

`ROOT` is the repository: params.yaml, dvc.yaml, the results (runs/, analyses/, figures/) and
the caches (.cache/) are found from it, wherever the command runs; modules import it from here,
and `load_yaml`, which reads params.yaml, dvc.yaml and the registry.
"""

import copy
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml's parser, when PyYAML has it: 7x faster


def load_yaml(path: str | Path) -> Any:
    """The YAML file at `path`, parsed as `yaml.safe_load` would: a copy of its last parse while the
    file keeps its modification time and size (params.yaml is read many times a command)."""
    stat = Path(path).stat()
    return copy.deepcopy(_parsed(str(Path(path).resolve()), stat.st_mtime_ns, stat.st_size))


@lru_cache(maxsize=16)
def _parsed(path: str, mtime_ns: int, size: int) -> Any:
    return yaml.load(Path(path).read_text(), Loader=YAML_LOADER)
