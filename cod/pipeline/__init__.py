"""The pipeline layer: what runs the experiments and the notebooks. `experiments` prepares a
profile's tokens, plans its runs and trains them side by side (`python -m cod.pipeline.experiments`);
`stages` derives what dvc.yaml says of the notebook stages (`python -m cod.pipeline.stages --write`);
`notebook` is the papermill runner of the notebook stages (`python -m cod.pipeline.notebook`);
`runner` runs DVC stages side by side and records them in dvc.lock (`python -m cod.pipeline`)."""
