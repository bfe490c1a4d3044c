"""The report layer: what turns committed records into pages. `docs` is the one writer of the
generated docs pages and of the README's generated block (`python -m cod.report`); `cpu_speed`,
`gpu_results`, `memory_sizes` and `pipeline_graph` render its sections; `site` builds the results
site (`make site`); `notebook_html` renders executed notebooks as HTML; `plots_page` writes the
offline page template of `dvc plots show`."""
