"""Results tables -> the paper's tables, figures and a report (pandas, pyarrow, matplotlib only).

This layer knows the results table (docs/results-table.md) and nothing else: it never imports
torch, ray or sbfn_dist, so a report renders on any machine that has the parquet files.
"""
