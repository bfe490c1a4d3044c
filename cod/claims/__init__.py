"""The claims layer: the papers' claims (`registry.yaml`, read by `registry`), the one rule that judges
them (`verdicts`), the scoreboard of every judged claim, and the helpers the notebooks judge with:
perplexity tables over seeds (`tables`), paper A's sweeps (`sweep`), paper B's ladders (`ladder`), the
recipes compared (`recipes`), the headline pilot (`pilot`) and the depth map (`depth_map`)."""
