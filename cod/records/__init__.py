"""The records layer: the files the stages write and notebooks read. Training runs write
runs/<profile>/<experiment>/<variant>_s<seed>/ (config.json, history.jsonl, final.json), read back
into tables (`results`); the analysis stages write analyses/<profile>/<analysis>/ (`analyses`). It
sits below the trainer and the analysis stage, which write them, and above the model and the
measures, whose configuration and results they hold."""
