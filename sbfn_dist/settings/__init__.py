"""What a trial is, torch-free: every setting once (`fields`), the tasks (`tasks`) and one
trial's checked settings (`config`). Floor 1 of the library: they check a data set's name against
the catalogue (sbfn_dist/catalog.py) and a user's import path with sbfn_dist/user_code.py, both
on floor 0; the records' schema that reads them lies above, in sbfn_dist/records.py (floor 2),
which is what the analysis layer reads of them."""
