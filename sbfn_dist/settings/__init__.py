"""What a trial is, torch-free: every setting once (`fields`), the tasks (`tasks`), one
trial's checked settings (`config`), the record schema (`records`) and the data catalog
(`catalog`: which data sets exist and their shapes). The analysis layer reads these only."""
