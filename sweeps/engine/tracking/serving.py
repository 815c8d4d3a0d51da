"""What an exported model answers (`mlflow models serve`, mlflow.pyfunc.load_model): the MLflow
pyfunc model over the saved directory, and the checks of what it is sent.

A request the model cannot answer is refused in one line, as MLflow answers a model's
MlflowException with INVALID_PARAMETER_VALUE: HTTP 400 and {"error_code":
"INVALID_PARAMETER_VALUE", "message": "Failed to predict data '<the rows>'. Error: <the line>"}
-- never a prediction of NaN with 200, nor MLflow's "unexpected error" with a stack trace:

    no rows                          send at least one row
    a column the model needs         missing columns ['bmi'] (any order; others are ignored,
                                     as MLflow's signature enforcement ignores them). MLflow's
                                     signature check, which runs first, refuses it already
                                     ("Model is missing inputs ['bmi']"): this is for callers
                                     past it (docs/models.md)
    a cell that is no finite number  column 'bmi' holds an empty cell (null or NaN) in row 0
    an answer that is no number      the inputs lie too far outside the training data for the
                                     members (1e300 overflows them): the row and the column
                                     farthest out, in training standard deviations

(A column of text is refused by MLflow's own type conversion, in one line, before the model
sees it.)
"""

import numpy as np
import pandas as pd

from sbfn_dist.errors import SbfnError
from sbfn_dist.interfaces import saved
from sbfn_dist.interfaces.estimators import text_columns


ARTIFACT = "sbfn_model"          # the saved directory, an artifact of the MLflow model
TRUSTED = "trust_factories"      # the model config's key: the member factories it may import


class ServedInputError(SbfnError):
    """A request the served model cannot answer; the message says what to send instead."""


class SavedSBFN:
    """The MLflow pyfunc model: the saved directory, loaded by sbfn_dist (no pickle of the
    model itself). Tables in as a DataFrame of the training columns; regression answers the
    predictions, classification the label and each class's probability."""

    def load_context(self, context):
        # The member factories the export itself named in the model's config (whoever can
        # change that file can change this model's code too): trusted by name, no others.
        trusted = (context.model_config or {}).get(TRUSTED, ())
        self.model = saved.load(context.artifacts[ARTIFACT], trust_factories=trusted)

    def predict(self, context, model_input, params=None):
        try:
            X = served_rows(self.model, model_input)
            if not hasattr(self.model, "classes_"):
                return require_finite_answer(self.model, X, self.model.predict(X))
            probs = require_finite_answer(self.model, X, self.model.predict_proba(X))
        except SbfnError as exc:     # ours, and the estimators' (images of another shape)
            # Imported here: the export imports this module without MLflow; a request that
            # reaches predict runs under it.
            from mlflow.exceptions import MlflowException
            raise MlflowException.invalid_parameter_value(str(exc)) from None
        labels = self.model.classes_[probs.argmax(1)]
        return pd.DataFrame({"label": labels, **{f"p_{c}": probs[:, j]
                                                for j, c in enumerate(self.model.classes_)}})


def pyfunc_model():
    """SavedSBFN as an mlflow.pyfunc.PythonModel (made here: importing this module does not
    import MLflow)."""
    import mlflow.pyfunc
    return type("SBFNPyfunc", (SavedSBFN, mlflow.pyfunc.PythonModel), {"__module__": __name__})


# The MLflow model's code (MLflow's "models from code"): a file logged with the model, run when
# it loads, instead of a pickle of the wrapper -- nothing in the logged model is a pickle.
# (Models logged before this module existed import pyfunc_model from sweeps.engine.export, and
# those logged before issue 49's renames from sweeps.engine.tell.serving: both old names still
# load, sweeps/engine/__init__.py, MOVED.)
MODEL_CODE = """import mlflow
from sweeps.engine.tracking.serving import pyfunc_model

mlflow.models.set_model(pyfunc_model()())
"""


def served_rows(estimator, model_input):
    """The rows to predict for: a table's columns by the training names, in the training order;
    at least one row; every cell a finite number. Else ServedInputError."""
    names = getattr(estimator, "feature_names_in_", None)
    if isinstance(model_input, pd.DataFrame) and names is not None:
        missing = [str(n) for n in names if n not in model_input.columns]
        if missing:
            raise ServedInputError(f"missing columns {missing}: send every column the model "
                                   f"was trained on: {', '.join(map(str, names))}")
        X = model_input[list(names)]
    else:
        X = model_input if isinstance(model_input, pd.DataFrame) else np.asarray(model_input)
    if len(X) == 0:
        said = f" of the columns {', '.join(map(str, names))}" if names is not None else ""
        raise ServedInputError(f"no rows: send at least one row{said}")
    _require_finite(X)
    return X


def _require_finite(X) -> None:
    """Every cell a finite number: the members cannot predict from an empty (null, NaN) or
    infinite cell (fit refused them too)."""
    columns = list(X.columns) if isinstance(X, pd.DataFrame) else None
    try:
        values = np.asarray(X, dtype=np.float64).reshape(len(X), -1)
    except (TypeError, ValueError):
        raise ServedInputError(f"{_text_cell(X)}: send a number in every cell") from None
    bad = ~np.isfinite(values)
    if bad.any():
        row, cell = map(int, np.argwhere(bad)[0])
        what = "an empty cell (null or NaN)" if np.isnan(values[row, cell]) else \
            f"{values[row, cell]:g}"
        where = f"column {columns[cell]!r}" if columns else "the input"
        raise ServedInputError(f"{where} holds {what} in row {row} ({int(bad.sum())} such "
                               "cells in all): send a finite number in every cell")


def _text_cell(X) -> str:
    """Where the rows hold something that is no number (a table: its column, row and value)."""
    text = text_columns(X) if isinstance(X, pd.DataFrame) else {}
    if not text:
        return "the rows hold values that are no numbers"
    column, (row, value) = next(iter(text.items()))
    return f"column {column!r} holds {value!r} in row {row}, which is no number"


def require_finite_answer(estimator, X, answer: np.ndarray) -> np.ndarray:
    """`answer` (predictions, or class probabilities) if every row's is finite, else
    ServedInputError: finite inputs far enough outside the training data overflow the members
    (a row of 1e300 was answered NaN with HTTP 200)."""
    rows = np.flatnonzero(~np.isfinite(answer.reshape(len(answer), -1)).all(axis=1))
    if rows.size:
        raise ServedInputError(f"the model's answer for row{'s' if rows.size > 1 else ''} "
                               f"{rows[:5].tolist()}{' ...' if rows.size > 5 else ''} is not a "
                               f"finite number: {_farthest(estimator, X, rows[0])}; send values "
                               "on the scale of the training data")
    return answer


def _farthest(estimator, X, row: int) -> str:
    """Why, in words: the row's value farthest from the training data, in training standard
    deviations (tables: the estimator's FoldScaler), else that its values lie too far out."""
    scaler = getattr(estimator, "scaler_", None)
    if scaler is None or not isinstance(X, pd.DataFrame):
        return f"row {row}'s values lie too far outside the training data for the networks"
    x = X.iloc[row].to_numpy(dtype=np.float64)
    with np.errstate(over="ignore"):
        z = np.abs((x - scaler.mean_) / scaler.std_)
    j = int(np.argmax(z))
    return (f"its values lie too far outside the training data for the networks (row {row}: "
            f"column {X.columns[j]!r} = {x[j]:g}, {z[j]:.3g} training standard deviations "
            "from its mean)")
