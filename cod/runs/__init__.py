"""The runs layer: what params.yaml declares and what becomes of it.

    params    the experiments' runs (variants x seeds) expanded under a profile
    plan      what a profile costs, from measured throughput
    analysis  the analyses of trained weights (the analyse stages), stored as small files
    curves    every run's loss curve and failure line in files DVC plots and notebooks read
"""
