"""The two tasks, framed as the paper frames them: by loss geometry (section "Loss Geometry and
Centroid-based Ensemble Combiners"). Squared loss (Euclidean) for regression, cross-entropy
(simplex) for classification.

A Task is a declarative spec (torch-free, so analysis may read it): the geometry's name in
`sbfn_dist.learners.geometry.GEOMETRIES`, the headline metric and its direction, the score columns
of every record, and the combiners and competitors a trial of the task may ask for. Code that
depends on the task asks its Task (or its geometry) instead of branching on names.
"""

from dataclasses import dataclass

# Regression combiners (paper, Table "s-BFN variants"). sbfn_ls_linear: the closed-form s-BFN
# with an intercept and the raw member outputs as extra linear features (docs/method.md).
CLOSED_FORM = ("sbfn_ls", "sbfn_ls_linear")
ITERATIVE = ("g1", "g2", "g3")
REGRESSION_COMBINERS = (*CLOSED_FORM, *ITERATIVE, "arithmetic")

# Classification combiners (Table "Ensemble variants"): s-BFN and MoE heads on-the-fly
# (Algorithm 2) or stacked on a validation part; "Mean" = logit averaging (optionally with a
# temperature tuned on the validation part); probability averaging; "Base Avg." = the members'
# average score.
ON_THE_FLY_HEADS = ("sbfn", "moe")
SBFN_HEADS = ("sbfn", "sbfn_stacked")
LEARNED_HEADS = ("sbfn", "sbfn_stacked", "moe", "moe_stacked")
CLASSIFICATION_COMBINERS = ("sbfn", "sbfn_stacked", "moe", "moe_stacked", "logit_mean",
                            "logit_mean_tuned", "prob_mean", "base_avg")
# The s-BFN forms among the combiners (the closed form and its linear variant, G1-G3, the
# general basis; the classification heads), which a sweep's end table ranks among themselves.
SBFN_FORMS = (*CLOSED_FORM, *ITERATIVE, "sbfn_rbf", *SBFN_HEADS)

# The paper's competitors (a sweep's default competitor trials), and every name of the
# estimators registry (sbfn_dist.learners.competitors): each task has its own scikit-learn model of
# each name; competitors and plug-ins may also be any estimator named by its import path.
COMPETITORS = ("svm_rbf", "random_forest", "gradient_boosting")
ESTIMATORS = (*COMPETITORS, "extra_trees", "hist_gradient_boosting", "knn", "ridge", "mlp")
# The combiners practitioners ship, which every default comparison shows beside the s-BFN
# (issue 46; docs/method.md, "The practitioners' combiners"): Caruana et al.'s (2004) greedy
# ensemble selection with replacement (auto-sklearn, AutoGluon's WeightedEnsemble), NNLS
# stacking (Breiman 1996; the Super Learner's default), and the ridge / logistic stacker
# (scikit-learn's StackingRegressor / StackingClassifier final step); and the best single
# hypothesis chosen on the rows the stackers fit on, the floor every combiner must clear.
ANCHORS = {"regression": ("ensemble_selection", "stack_nnls", "stack_ridge"),
           "classification": ("ensemble_selection", "stack_nnls", "stack_logistic")}
BEST_SINGLE = "best_single"
# Per task, all of them: part of every trial's default combiners.
PRACTITIONERS = {task: (*anchors, BEST_SINGLE) for task, anchors in ANCHORS.items()}

# Regression combiners fitted on the training part's D beside the s-BFN
# (sbfn_dist.combiners.stacking.stacker; docs/method.md, "Heterogeneous s-BFN"): sbfn_rbf, the
# paper's general form -- K multivariate RBF units over the whole hypothesis vector, plus linear
# terms and an intercept, K and lambda2 chosen by inner CV; opt-in: a trial runs it only when its
# combiners name it -- and the practitioners' combiners.
STACKERS = ("sbfn_rbf", *PRACTITIONERS["regression"])
# The classification combiners fitted on the validation part, held out from the members: the
# stacked heads, the tuned temperature of logit averaging, and the practitioners' combiners.
STACKED_HEADS = ("sbfn_stacked", "moe_stacked")
STACKED = (*STACKED_HEADS, "logit_mean_tuned", *PRACTITIONERS["classification"])
# Beyond the paper (docs/method.md, "Plug-in classifiers"): the combiners whose D holds the
# plug-ins' out-of-fold class probabilities beside the members' -- the stacked heads and the
# practitioners' combiners they must beat.
PLUGIN_HEADS = (*STACKED_HEADS, *PRACTITIONERS["classification"])

# Scores where larger is better (every other score is an error or a loss).
HIGHER_IS_BETTER = ("accuracy", "r2")


@dataclass(frozen=True)
class Task:
    name: str
    geometry: str              # key of sbfn_dist.learners.geometry.GEOMETRIES
    metric: str                # the headline score: tables, search objective, "best so far"
    higher_is_better: bool
    scores: tuple              # the score columns of every scored record
    combiners: tuple           # the combiners a trial runs by default (the paper's, then
                               # the practitioners')
    competitors: tuple = COMPETITORS
    optional: tuple = ()       # combiners a trial runs only when asked for

    @property
    def allowed(self) -> tuple:
        return self.combiners + self.optional

    def sign(self) -> int:
        """+1 where smaller is better: `sign * value` is minimised."""
        return -1 if self.higher_is_better else 1

    @property
    def mode(self) -> str:
        """Ray Tune's / Optuna's name for the direction."""
        return "max" if self.higher_is_better else "min"


TASKS = {
    "regression": Task("regression", "squared", "rmse", False, ("rmse", "mae", "r2"),
                       (*REGRESSION_COMBINERS, *PRACTITIONERS["regression"]),
                       optional=("sbfn_rbf",)),
    "classification": Task("classification", "cross_entropy", "accuracy", True,
                           ("accuracy", "nll", "ece"),
                           (*CLASSIFICATION_COMBINERS, *PRACTITIONERS["classification"])),
}
