"""cod: the curse of depth, reproduced (README.md).

`ROOT` is the repository: params.yaml, dvc.yaml, the results (runs/, analyses/, figures/) and
the caches (.cache/) are found from it, wherever the command runs; modules import it from here.
"""

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
