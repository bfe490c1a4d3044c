"""The records layer: the files training runs write (runs/<profile>/<experiment>/<variant>_s<seed>/:
config.json, history.jsonl, final.json), read back into tables (`results`). It sits below the trainer,
which writes them, and above the model, whose configuration they hold."""
