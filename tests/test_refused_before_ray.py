"""Bad input that a sweep refuses in one line before Ray starts, found by a new user's cases
(issue 48): each once silently accepted, or refused only by every trial, or a traceback."""

import time

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


def run_file(tmp_path, text: str, *flags) -> int:
    from sweeps import __main__ as sweeps_main
    path = tmp_path / "sweep.yaml"
    path.write_text(text)
    return sweeps_main.main(["run", str(path), "--storage", str(tmp_path / "results"), *flags])


FILE = "dataset: diabetes\ngrid: demo\nsmoke: true\nmlflow: false\n"


@pytest.mark.parametrize("axis, written", [("epsilon: [0, -0.0]", "(as 0 and -0)"),
                                           ("epsilon: [-0.0, 0.0]", "(as -0 and 0)"),
                                           ("n_members: [3, 3]", "")])
def test_an_axis_value_written_twice_is_refused_in_a_sweep_file(axis, written, tmp_path,
                                                                capsys):
    """`epsilon: [0, -0.0]` ran two trials of identical results ("2 configurations with
    results"), where docs/errors.md promised a repeated value refused; `--epsilons 0 -0.0`
    too."""
    assert run_file(tmp_path, FILE + f"axes: {{{axis}}}\n", "--dry-run") == 2
    line = one_error_line(capsys)
    name, _, values = axis.partition(": ")
    assert f"the grid repeats a trial: {name} lists" in line and f"twice{' ' + written if written else ''}; give each value once" in line, line
    assert not (tmp_path / "results").exists()


def test_the_command_line_refuses_minus_zero_beside_zero(tmp_path, capsys):
    assert regression(["--dataset", "diabetes", "--grid", "demo", "--smoke", "--no-mlflow",
                       "--epsilons", "0", "-0.0", "--dry-run", "--storage",
                       str(tmp_path)]) == 2
    assert "epsilon lists 0 twice (as 0 and -0)" in one_error_line(capsys)


@pytest.mark.parametrize("axis, words", [
    ("n_members: [2, 100000000000000000000]",
     "axes.n_members = [2, 100000000000000000000]: 100000000000000000000 is beyond the "
     "records' 64-bit integers (at most 9223372036854775807)"),
    ("width: [20, 100000000000000000000]",
     "config field 'width' = 100000000000000000000 is not allowed: 100000000000000000000 is "
     "beyond the records' 64-bit integers")])
def test_an_integer_beyond_the_records_int64_is_refused_at_the_dry_run(axis, words, tmp_path,
                                                                       capsys):
    """n_members: 10**20 passed --dry-run, then crashed the run and every --resume in the
    records' writing (store.py, OverflowError, 295 lines)."""
    assert run_file(tmp_path, FILE + f"axes: {{{axis}}}\n", "--dry-run") == 2
    assert words in one_error_line(capsys)


def test_a_grid_of_ten_million_is_refused_at_its_bad_value_before_it_is_crossed(capsys):
    """A 10^7-configuration grid was listed whole (111 s, 5.7 GB) before its first value was
    checked; each axis value is checked first now, on the grid's first trial: seven axes of
    ten values, the last one out of range, are refused in a few checks."""
    from sweeps import Sweep, SweepFileError
    tens = {"width": list(range(10, 110, 10)), "lr": [0.001 * k for k in range(1, 11)],
            "init_scale": [0.1 * k for k in range(1, 11)], "epochs": list(range(1, 11)),
            "batch_size": list(range(1, 11)), "lambda1": [0.0001 * k for k in range(10)],
            "epsilon": [0.1 * k for k in range(9)] + [2.0]}
    started = time.monotonic()
    with pytest.raises(SweepFileError, match=r"config field 'epsilon' = 2.0 is not allowed"):
        Sweep.from_dict({"name": "huge", "dataset": "diabetes", "mlflow": False, "axes": tens})
    assert time.monotonic() - started < 20
    assert "[huge] planning 10,000,005 configurations" in capsys.readouterr().err


def test_a_yaml_boolean_word_as_a_key_is_named_as_written(tmp_path, capsys):
    """YAML 1.1 reads `yes:` as the boolean True: `yes: 1` was told `unknown key 'True'`."""
    assert run_file(tmp_path, FILE + "yes: 1\n", "--dry-run") == 2
    line = one_error_line(capsys)
    assert "unknown key 'yes'" in line and "True" not in line, line


def test_images_too_small_for_the_members_are_refused_before_ray(tmp_path, capsys,
                                                                 ray_connects):
    """3x3 images were refused inside each trial ("1 configurations with results, 1 failed")."""
    import numpy as np

    from sweeps.commands.image_sweeps import ANY, main_for
    data = tmp_path / "tiny.npz"
    rng = np.random.default_rng(0)
    np.savez(data, x=rng.random((60, 3, 3)).astype("float32"), y=np.arange(60) % 2)
    assert main_for(ANY, ["--dataset", f"npz:{data}", "--smoke", "--no-mlflow", "--storage",
                          str(tmp_path / "results")]) == 2
    line = one_error_line(capsys)
    assert "the images are 3x3 pixels, smaller than the 4x4 the simple_cnn" in line, line
    assert not ray_connects and not (tmp_path / "results").exists()


def test_sigterm_while_a_sweep_is_planned_says_so_in_one_line(tmp_path):
    """It exited 143 without a word; Ctrl-C's line and status now, as SIGTERM once Ray runs."""
    import signal
    import subprocess
    import sys
    widths = ", ".join(map(str, range(1, 30_001)))
    (tmp_path / "big.yaml").write_text(f"name: big\ndataset: diabetes\nmlflow: false\naxes:\n"
                                       f"  width: [{widths}]\n  epsilon: [0.0, 0.5]\n")
    planning = subprocess.Popen([sys.executable, "-m", "sweeps", "run", "big.yaml", "--dry-run"],
                                cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)
    assert planning.stderr.readline().startswith("[big] planning 60,005 configurations")
    planning.send_signal(signal.SIGTERM)
    _, err = planning.communicate(timeout=60)
    assert planning.returncode == 130, err
    assert err.strip() == "interrupted: the sweep had not started; nothing was written"


# A command run as `python -m`, with a real signal sent to itself as the import named first
# begins: at a fixed point of its start, not after a guessed delay.
SIGNAL_AT_IMPORT = """
import os, runpy, signal, sys
at, sig = sys.argv[1], getattr(signal, sys.argv[2])
class Signal:
    def find_spec(self, name, path=None, target=None):
        if name == at:
            sys.meta_path.remove(self)
            os.kill(os.getpid(), sig)
sys.meta_path.insert(0, Signal())
sys.argv = sys.argv[3:]
runpy.run_module(sys.argv[0], run_name="__main__", alter_sys=True)
"""


@pytest.mark.parametrize("at, sig, command, said", [
    ("sweeps.engine.sweep", "SIGINT", "sweeps.regression", "had not started; nothing was written"),
    ("sweeps.engine.sweep", "SIGTERM", "sweeps.regression", "had not started; nothing was written"),
    ("sweeps.engine.common.tracking_uri", "SIGINT", "sweeps.relog", "had not started; nothing was written"),
    ("ray", "SIGINT", "sweeps.tools.check_cluster_yaml", "stopped before it finished")])
def test_a_command_interrupted_as_it_starts_says_so_in_one_line(tmp_path, at, sig, command, said):
    """Ctrl-C in a command's first seconds, while its imports load, printed a KeyboardInterrupt
    traceback (SIGTERM: exit 143, no word); so did one in a tool with no handling of its own
    (check_cluster_yaml imports Ray as it checks its first file)."""
    import signal
    import subprocess
    import sys
    done = subprocess.run([sys.executable, "-c", SIGNAL_AT_IMPORT, at, sig, command, "x.yaml"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == -signal.SIGINT, done.stderr
    assert done.stderr.strip() == f"interrupted: the command {said}"


@pytest.mark.parametrize("value", ["0", "100000000000000000000"])
def test_a_seed_count_beyond_the_seeds_range_is_refused_in_one_line(tmp_path, capsys, value):
    """seeds: 10**20 in a sweep file ended in an OverflowError traceback while the grid was
    made; --seeds 0 planned a sweep of no trial. Both are one line, the flag's and the file's
    alike (issue 48)."""
    from sweeps.__main__ import main as sweeps_main
    from sweeps.regression import main as regression
    with pytest.raises(SystemExit):
        regression(["--dataset", "diabetes", "--grid", "demo", "--seeds", value, "--dry-run",
                    "--no-mlflow", "--storage", str(tmp_path)])
    assert "an integer in [1, 4294967296]" in capsys.readouterr().err
    path = tmp_path / "s.yaml"
    path.write_text(f"grid: demo\ndataset: diabetes\nseeds: {value}\n")
    assert sweeps_main(["run", str(path), "--dry-run", "--storage", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "an integer in [1, 4294967296]" in err
