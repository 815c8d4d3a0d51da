"""Bad input that a sweep refuses in one line before Ray starts, found by a new user's cases
(issue 48): each once silently accepted, or refused only by every trial, or a traceback."""

import pytest

from sbfn_dist.data.tabular import load_tabular
from sbfn_dist.errors import DataError
from sweeps.regression import main as regression


def one_error_line(capsys) -> str:
    """The one `error: ` line a refused command printed, after checking it printed no
    traceback."""
    err = capsys.readouterr().err
    assert "Traceback" not in err, err
    [line] = [line for line in err.splitlines() if line.startswith("error: ")]
    return line


def test_a_csv_that_names_a_column_twice_is_refused_naming_it(tmp_path, capsys, ray_connects):
    """`a,y,b,y` (its 4th column -y) with target=y: pandas renamed the second y to y.1, a
    feature that leaked the target (RMSE 0.195, exit 0, no word)."""
    data = tmp_path / "dup.csv"
    data.write_text("a,y,b,y\n" + "".join(f"{i % 7},{i},{i % 3},{-i}\n" for i in range(60)))
    with pytest.raises(DataError, match=r"names a column more than once in its header row "
                                        r"\('y' in columns 2, 4\)"):
        load_tabular(f"csv:{data}", target="y")
    code = regression(["--dataset", f"csv:{data}", "--set", "target=y", "--grid", "demo",
                       "--no-mlflow", "--storage", str(tmp_path / "results")])
    line = one_error_line(capsys)
    assert code == 2 and "'y' in columns 2, 4" in line and "y.1" in line, line
    assert not ray_connects and not (tmp_path / "results").exists()
