"""The appendix experiment end to end at a small size: run_trial records, centres, table, figures."""

import pandas as pd

from sweeps.appendix import main


def test_appendix_command_writes_its_table_and_both_figures(tmp_path):
    main(["--out", str(tmp_path), "--runs", "2", "--m", "2", "5"])
    results = pd.read_parquet(tmp_path / "results.parquet")
    assert set(results["sbfn_basis"]) == {"member", "kmeans"} and len(results) == 8
    assert (results["n_test"] == 1000).all() and (results["n_train"] == 300).all()
    table = pd.read_csv(tmp_path / "report" / "tables" / "appendix_rmse.csv")
    assert len(table) == 4 and (table["n_runs"] == 2).all()
    mean = results.groupby(["n_members", "sbfn_basis"])["rmse"].mean()
    assert table.set_index(["n_members", "sbfn_basis"])["mean"].to_dict() == mean.to_dict()
    centres = pd.read_parquet(tmp_path / "centres.parquet")
    # K = M units per basis, each placed inside the input square [-3, 3]^2
    assert centres.groupby(["n_members", "sbfn_basis"]).size().to_dict() == {
        (2, "kmeans"): 2, (2, "member"): 2, (5, "kmeans"): 5, (5, "member"): 5}
    assert centres[["x1", "x2"]].abs().max().max() <= 3
    for name in ("appendix_rmse", "appendix_centres"):
        assert (tmp_path / "report" / "figures" / f"{name}.png").stat().st_size > 1000
    assert "figures/appendix_centres.png" in (tmp_path / "report" / "report.md").read_text()
