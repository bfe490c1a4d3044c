"""The trainer layer: the training loop and its side jobs (`trainer`), a run's identity
(`fingerprint`), the host's allocator setting (`host`) and the command line that trains one run
under its identity (`python -m cod.train.run`)."""
