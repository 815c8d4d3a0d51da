"""Results tables -> the paper's tables, figures and a report (pandas, pyarrow, matplotlib only).

This layer knows the results table (docs/results-table.md) and, of the library, only its
records registry `sbfn_dist.records` (which columns are hyper-parameters, model names, each
task's metric), the data-set catalogue `sbfn_dist.catalog` and the results directory's layout
`sbfn_dist.results_dir`; it never imports torch, ray or scikit-learn, so a report renders on any
machine that has the parquet files (tests/test_analysis_layers.py guards both).
"""
