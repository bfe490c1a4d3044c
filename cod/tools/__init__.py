"""Operations tooling, outside the library the experiments use: a lent GPU's one call and what it
carries (`gpu_lease`, `gpu_carry`), the CPU speed benchmark (`benchmark`) and the memory sizing
(`memory`). Each is a command line, `python -m cod.tools.<name>`; no module of the library imports
them."""
