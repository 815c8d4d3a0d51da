"""Data sets, splits and fold-local preprocessing: `catalog` (what exists, torch-free),
`tabular` and `images` (loaders), `splits`, `preprocess`."""
