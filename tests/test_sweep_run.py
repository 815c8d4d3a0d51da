"""Real sweeps through Ray Tune on a local Ray (127.0.0.1), logged to real MLflow stores."""

import json
from pathlib import Path

import pytest

from analysis.report import write_report
from sweeps.engine.run.resources import ResourceError
from tests.sweep_helpers import (LOGGED, ONE_AT_A_TIME, SEARCHED, a_ray, assert_each_fold_once,
                                 config_keys, mlflow_runs, results, run_tiny)

pytestmark = pytest.mark.timeout(600)


@pytest.fixture(scope="module", autouse=True)
def local_ray():
    with a_ray():
        yield


def test_a_smoke_sweep_writes_every_trial_to_results_and_to_mlflow(shared_sweeps, tmp_path):
    _, outcome, out = shared_sweeps(*LOGGED)      # --members 2; test_sweep_mlflow reads it too
    table = results(outcome.root)
    ids = config_keys(outcome)
    assert len(ids) == 4       # M=2 × ε∈{0, 0.35}, the M = 1 reference, the competitors
    assert len(outcome.trials) == 2     # --pack auto, one slot: one pack of MLP sets + SVM-RBF
    assert_each_fold_once(table, ids, range(3))
    assert set(table["model"]) >= {"sbfn_ls", "g1", "arithmetic", "svm_rbf"}
    # Tune's own records of each trial's reports, without TensorBoard's event files (its logger
    # loaded torch into the driver: sweeps/engine/tune.py, _callbacks)
    tune_dir = Path(outcome.root) / "tune"
    assert len(list(tune_dir.glob("*/result.json"))) == len(outcome.trials)
    assert not list(tune_dir.rglob("events.out.tfevents*"))
    assert (table["sweep"] == "tiny").all()

    client, runs = mlflow_runs(outcome.tracking_uri, "tiny")
    assert sorted(r.data.tags["trial_id"] for r in runs) == sorted(ids)
    for run in runs:
        assert run.info.status == "FINISHED"
        # params: the settings the sweep's configurations differ in, that this one holds (a
        # competitor trains no members); its whole config, no more, is its config.json
        role, params = run.data.tags["role"], set(run.data.params)
        if role == "competitors":
            assert params == set()
        else:     # lr where the references' differ from the ensembles' (--smoke keeps one)
            assert {"n_members", "epsilon"} <= params <= {"n_members", "epsilon", "lr"}
        here = tmp_path / run.info.run_id
        here.mkdir()
        config = json.loads(Path(client.download_artifacts(run.info.run_id, "config.json",
                                                           str(here))).read_text())
        assert ("lambda2" in config) == (role == "ensemble")      # M = 1 runs "arithmetic" only
        assert {"dataset", "task", "seed", "folds", "extra"} <= set(config)
        assert run.data.tags["dataset"] == "diabetes" and run.data.tags["code_version"]
        assert run.data.metrics["folds_done"] == 3
        assert {a.path for a in client.list_artifacts(run.info.run_id)} == {
            "config.json", "records.csv", "records.parquet"}

    report = write_report([outcome.root], tmp_path / "report")     # the analysis layer reads it
    text = (report / "report.md").read_text()
    assert "| tiny |" in text and "quartiles_diabetes.csv" in text

    assert "results.parquet" in out and "mlflow ui --backend-store-uri" in out
    assert "python -m analysis.report" in out and "configurations 4/4 done" in out
    # the s-BFN form the published runs favour, and which form won (issue 32)
    assert "| best sbfn_ls_linear rmse " in out and "\ns-BFN forms by rmse, best first: " in out
    assert "4 configurations in 2 trials (--pack auto)" in out


def test_packed_and_unpacked_sweeps_give_the_same_records(tmp_path):
    """--pack auto trains compatible configurations as one member stack per fold: each keeps
    its own records (and trial key), equal to the unpacked sweep's up to float32 rounding (the
    float64 pack equals sequential training to 1e-10: tests/test_vectorised_training.py)."""
    packed = results(run_tiny(tmp_path, "--no-mlflow", *ONE_AT_A_TIME, name="packed").root)
    alone = results(run_tiny(tmp_path, "--no-mlflow", "--pack", "off", *ONE_AT_A_TIME,
                             name="alone").root)
    key = ["role", "n_members", "epsilon", "lr", "fold", "model", "model_params"]  # keys name
    # their sweep, so the two sweeps' trial ids differ
    merged = packed.merge(alone, on=key, suffixes=("_packed", "_alone"))
    assert len(merged) == len(packed) == len(alone)
    ensemble = merged[merged["role"] == "ensemble"]
    # A pack runs the same float32 arithmetic in matrix products of other shapes, which BLAS
    # may sum in another order (AMD EPYC does, for 181 of 252 rows here; an Intel Xeon gave
    # equal bits): each product then rounds differently, by about one unit roundoff
    # u = 2^-24 relative. Training is `steps` SGD updates; were each update's rounding
    # difference to add up in one direction, the weights -- and the RMSE through them -- would
    # differ by steps * u relative (400 steps here: 2.4e-5). Measured: up to 1.5e-6, about
    # sqrt(steps) * u, as differences that partly cancel. A packing error (a set trained with
    # another's epsilon or members) moves an RMSE by percents. Competitors train nothing: equal.
    steps = (merged["epochs_packed"] * merged["n_train_packed"]
             / merged["batch_size_packed"]).fillna(0)
    bound = steps * 2.0 ** -24 * merged["rmse_alone"].abs()
    assert ((merged["rmse_packed"] - merged["rmse_alone"]).abs() <= bound).all()
    assert (merged.loc[steps == 0, "rmse_packed"] == merged.loc[steps == 0, "rmse_alone"]).all()
    assert (ensemble["packed_members_packed"] > ensemble["n_members"]).all()
    assert (ensemble["packed_members_alone"] == ensemble["n_members"]).all()


SMALL = ("--members", "2", "--epsilons", "0", "--competitors", "none",     # 2 configurations
         *ONE_AT_A_TIME)


@pytest.fixture(scope="module")
def served(tmp_path_factory, mlflow_server):
    """A small sweep logged to the session's MLflow server: its storage and outcome. The next
    test then starts a sweep of its name again (one sweep for both)."""
    storage = tmp_path_factory.mktemp("served")
    return storage, run_tiny(storage, *SMALL, "--mlflow-uri", mlflow_server)


def test_the_same_sweep_logs_to_a_real_mlflow_server(served, mlflow_server):
    _, outcome = served
    _, runs = mlflow_runs(mlflow_server, "tiny")
    assert len(runs) == 2 and all(r.info.status == "FINISHED" for r in runs)
    assert {r.data.tags["role"] for r in runs} == {"ensemble", "reference"}
    assert len(results(outcome.root)) > 0


def test_optuna_search_samples_the_grid_axes_with_a_seeded_tpe(shared_sweeps):
    _, outcome, out = shared_sweeps(*SEARCHED)    # test_sweep_optuna reads it too
    assert "3 Optuna trials (no competitors" in out
    assert "over a 4-point space will repeat points; --search grid evaluates all 4" in out
    table = results(outcome.root)
    assert len(outcome.trials) == 3
    assert set(table["n_members"]) <= {5, 10} and set(table["epsilon"]) <= {0.0, 0.35}
    assert table["trial_id"].nunique() <= 3     # a configuration sampled twice is computed once


def test_asking_for_gpus_the_cluster_lacks_fails_at_once(tmp_path):
    from sweeps.regression import build
    from sweeps.engine.sweep import run_sweep
    spec, args, opts = build(["--dataset", "diabetes", "--grid", "demo", "--smoke", "--no-mlflow",
                              "--storage", str(tmp_path)])
    opts.num_gpus, opts.gpus_per_trial = 1, 0.25
    with pytest.raises(ResourceError, match="no GPU"):
        run_sweep(spec, opts)


def test_on_a_cluster_a_trial_no_node_fits_yet_waits_for_the_autoscaler(tmp_path, capsys):
    """cluster.yaml's head has no CPU and its workers start at zero: a CPU-only sweep must wait
    for a worker too (tests/test_cluster_autoscaler.py gets one); this Ray never adds any."""
    from sweeps.regression import build
    from sweeps.engine.sweep import run_sweep
    spec, _, opts = build(["--dataset", "diabetes", "--grid", "demo", "--smoke", "--no-mlflow",
                           "--storage", str(tmp_path), "--address", "auto", "--cpus-per-trial", "4"])
    opts.node_wait_s = 1        # no node ever comes: any wait elapses in full
    with pytest.raises(ResourceError, match=r"needing 4 CPU .* \(waited 1 s for the autoscaler\)"):
        run_sweep(spec, opts)
    assert "waiting up to 1 s for the cluster's autoscaler" in capsys.readouterr().out


def test_a_second_sweep_of_the_same_name_needs_resume(served):
    from sbfn_dist.errors import SbfnError
    storage, _ = served                 # a finished sweep named "tiny" (SMALL)
    with pytest.raises(SbfnError, match="--resume"):
        run_tiny(storage, *SMALL, "--no-mlflow")
    with pytest.raises(SbfnError, match="other settings"):
        run_tiny(storage, "--members", "5", "--competitors", "none", "--no-mlflow", "--resume")


def test_storage_may_be_a_pyarrow_uri(tmp_path):
    db = tmp_path / "tracking.db"
    outcome = run_tiny(tmp_path, *SMALL, "--storage", f"file://{tmp_path}/shared",
                       "--mlflow-uri", f"sqlite:///{db}")
    assert outcome.root == f"{tmp_path}/shared/tiny"
    assert results(outcome.root)["trial_id"].nunique() == 2
    assert (tmp_path / "shared" / "tiny" / "tune").is_dir() and db.exists()
