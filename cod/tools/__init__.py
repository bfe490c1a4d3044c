"""Operations tooling, outside the library the experiments use: a lent GPU's one call and what it
carries (`gpu_lease`, `gpu_carry`), the CPU speed benchmark (`benchmark`) and the memory sizing
(`memory`). Each is a command line, `python -m cod.tools.<name>`; nothing below this layer imports
them but `cod.plan`, which times a shape no run has measured with the benchmark's worker."""
