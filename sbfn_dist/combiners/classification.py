"""Combiners over member class probabilities P (N, M, C) (paper, "Averaging-based combiners",
Algorithm 2, Table "Ensemble variants").

Learned heads (s-BFN classifier, Mixture-of-Experts gate) train either on-the-fly, one step per
member mini-batch (Algorithm 2: `step`), or by stacking on held-out member predictions (`fit`).
Fixed rules: logit averaging ("Mean", the cross-entropy centroid, optionally with a temperature
tuned on a validation split) and probability averaging.
"""

import math

import torch
from torch import nn
from torch.nn import functional as F

from sbfn_dist.errors import ConfigError
from sbfn_dist.settings.fields import (CENTRE_INITS, CENTRE_STEPS, HEAD_OPTIMIZERS, ROW_NORMS,
                                       defaults)

PROB_FLOOR = 1e-12
_D = defaults("classification", "image")     # the heads' defaults: sbfn_dist.settings.fields


def _check_probs(P: torch.Tensor) -> None:
    if P.ndim != 3:
        raise ConfigError("member_probs", tuple(P.shape), "a tensor of shape (N, M, C)")


class TrainableHead(nn.Module):
    """A combiner trained on member probabilities; subclasses define `predict_proba(P)`.

    optimizer "sgd" is Algorithm 2's plain update alpha <- alpha - eta_alpha * grad; "adam" is
    offered because on-the-fly SGD learns very slowly while the members are still near-uniform
    (docs/method.md).

    A head that learned nothing can be told to give the constant guess instead (`guess`): from
    then on it predicts a class prior for every row (docs/method.md, "A head that learned
    nothing"); that state is part of its state_dict, so a saved head predicts as it did.
    """

    def __init__(self, lr: float, optimizer: str, n_classes: int):
        super().__init__()
        if optimizer not in HEAD_OPTIMIZERS:
            raise ConfigError("head_optimizer", optimizer, f"one of {HEAD_OPTIMIZERS}")
        self.lr, self.optimizer = lr, optimizer
        self._opt = None
        self.register_buffer("prior", torch.full((n_classes,), 1.0 / n_classes))
        self.register_buffer("guessing", torch.tensor(False))
        self._guessing = False    # mirrors `guessing` on the host: no device read per prediction
        # Post-hoc temperature tau of its probabilities (calibrate); 1: as trained.
        self.register_buffer("calibration", torch.tensor(1.0, dtype=torch.float64))

    def _optimizer(self):
        if self._opt is None:
            if self.optimizer == "sgd":
                self._opt = torch.optim.SGD(self.parameters(), lr=self.lr)
            else:   # capturable: its step count stays on the GPU, so a CUDA graph can hold it
                cuda = next(self.parameters()).is_cuda
                self._opt = torch.optim.Adam(self.parameters(), lr=self.lr, capturable=cuda)
        return self._opt

    def epoch_start(self) -> None:
        """Hook called before every epoch (Algorithm 2 updates gamma here)."""

    def batch(self, P: torch.Tensor, y: torch.Tensor) -> None:
        """The on-the-fly observer of member training (sbfn_dist.learners.training): one step per
        batch. Heads are float32 whatever the members' dtype; the MLP trainer runs under no_grad."""
        with torch.enable_grad():
            self.step(P.float(), y)

    def step(self, P: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """One SGD step on a mini-batch: the on-the-fly regime of Algorithm 2. Returns the
        batch's loss as a tensor: reading it would make the host wait for the device, and the
        step may be replayed from a CUDA graph (sbfn_dist.learners.steps), where nothing is read."""
        P = P.detach()
        self.prepare(P)
        loss = F.nll_loss(torch.log(self.predict_proba(P).clamp_min(PROB_FLOOR)), y)
        opt = self._optimizer()
        opt.zero_grad(set_to_none=False)    # gradients stay where a captured graph wrote them
        loss.backward()
        self.update(opt)
        return loss.detach()

    def update(self, opt) -> None:
        """One step's parameter update, after the gradients: the optimizer's step."""
        opt.step()

    def fit(self, P: torch.Tensor, y: torch.Tensor, epochs: int, batch_size: int,
            seed: int) -> "TrainableHead":
        """Stacking regime: train on held-out member predictions for `epochs` shuffled passes."""
        gen = torch.Generator().manual_seed(seed)
        for _ in range(epochs):
            self.epoch_start()
            order = torch.randperm(len(P), generator=gen).to(P.device)
            for s in range(0, len(P), batch_size):
                idx = order[s:s + batch_size]
                self.step(P[idx], y[idx])
        return self

    def prepare(self, P: torch.Tensor) -> None:
        """Lazy, data-dependent initialisation from the first batch seen."""

    @torch.no_grad()
    def predict_proba_eval(self, P: torch.Tensor, chunk: int = 4096) -> torch.Tensor:
        if self._guessing:
            _check_probs(P)
            return self.prior.expand(len(P), -1).clone()
        probs = torch.cat([self.predict_proba(P[s:s + chunk]) for s in range(0, len(P), chunk)])
        tau = float(self.calibration)
        return probs if tau == 1.0 else temperature_scaled(probs, tau)

    @torch.no_grad()
    def calibrate(self, tau: float) -> None:
        """From now on its probabilities are temperature-scaled by tau (Guo et al. 2017; 1: as
        trained, where no finite temperature fits)."""
        self.calibration.fill_(tau)
        self._calibrated = True

    @property
    def fitted(self) -> dict:
        """The record columns of its fit: the temperature it was calibrated with, if it was."""
        calibrated = getattr(self, "_calibrated", False)
        return {"calibration_temperature": float(self.calibration)} if calibrated else {}

    @torch.no_grad()
    def guess(self, prior: torch.Tensor) -> None:
        """From now on predict `prior` (C,) for every row: the constant guess."""
        self.prior.copy_(prior)
        self.guessing.fill_(True)
        self._guessing = True

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
        # A head saved before the constant guess (or the calibration) existed has no prior (or
        # temperature): it predicts as trained.
        for name in ("prior", "guessing", "calibration"):
            state_dict.setdefault(prefix + name, getattr(self, name))
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)
        self._guessing = bool(self.guessing)


class SBFNClassifierHead(TrainableHead):
    """s-BFN for cross-entropy (Algorithm 2): D_i = [p_i1; ...; p_iM] in R^{MC} ->
    H = exp(-||D_i - C_k||^2 / (2 gamma_k^2)), k = 1..K -> row-normalised H -> logits H alpha / T.

    Centres are learned with alpha (Algorithm 2's last line); they start at K structured vectors of
    the first batch seen, picked by k-means++ D^2 sampling (centre_init "kmeans++": with sharp
    members the structured vectors cluster by class, and D^2 sampling reaches every cluster
    where K uniform picks leave classes without a unit) or uniformly ("random"). gamma is not learned (the paper only says "update gamma" per epoch): it
    starts at the mean distance from each centre to its nearest other centre (Moody-Darken) and
    at every later epoch start becomes the RMS distance from the previous epoch's structured
    vectors to their nearest centre, so it follows the members as they sharpen. Rows are
    normalised by LayerNorm by default (the paper's example; "sum" gives the K features too
    little contrast for Algorithm 2's SGD step to move alpha, docs/method.md); "sum" is computed
    as a softmax of the exponents (identical for a shared gamma, no all-zero rows).

    centre_step "bounded" caps each centre's move in one step at one RBF width gamma (the
    direction is Algorithm 2's); "plain" is Algorithm 2's C <- C - eta_alpha grad_C. Through
    LayerNorm, whose Jacobian grows as 1/std when a row's K features are nearly equal, and the
    1/gamma^2 of the Gaussian, one plain step can throw a centre out of the region of D, after
    which the head's output is the same for every row (docs/method.md, "A head that learned
    nothing").
    """

    def __init__(self, n_members: int, n_classes: int, n_units: int,
                 temperature: float = _D["temperature"], lr: float = _D["lr_alpha"],
                 row_norm: str = _D["row_norm"], seed: int = 0,
                 optimizer: str = _D["head_optimizer"], reseed: bool = True,
                 centre_init: str = _D["centre_init"], centre_step: str = _D["centre_step"]):
        super().__init__(lr, optimizer, n_classes)
        if centre_init not in CENTRE_INITS:
            raise ConfigError("centre_init", centre_init, f"one of {CENTRE_INITS}")
        if centre_step not in CENTRE_STEPS:
            raise ConfigError("centre_step", centre_step, f"one of {CENTRE_STEPS}")
        self.reseed, self.centre_init, self.centre_step = reseed, centre_init, centre_step
        if temperature <= 0 or not math.isfinite(temperature):
            raise ConfigError("temperature", temperature, "a number T > 0")
        if row_norm not in ROW_NORMS:
            raise ConfigError("row_norm", row_norm, f"one of {ROW_NORMS}")
        self.n_units, self.temperature, self.row_norm, self.seed = n_units, temperature, row_norm, seed
        self.n_hypotheses = n_members     # the hypotheses of D it reads (members, then plug-ins)
        dim = n_members * n_classes
        self.centres = nn.Parameter(torch.zeros(n_units, dim))
        self.alpha = nn.Parameter(torch.zeros(n_units, n_classes))
        self.register_buffer("gamma", torch.ones(n_units))
        self.register_buffer("initialised", torch.tensor(False))
        # This epoch's summed squared distance to the nearest centre and its row count: on the
        # device, so that a step never waits for it (read once per epoch, in epoch_start).
        self.register_buffer("_r2", torch.zeros(2, dtype=torch.float64), persistent=False)
        # The centres before a step, for the bounded step (in place: a CUDA graph may replay it).
        self.register_buffer("_centres_before", torch.zeros(n_units, dim), persistent=False)
        self._ready = False      # mirrors `initialised` on the host: no device read per step
        self.norm = nn.LayerNorm(n_units) if row_norm == "layernorm" else None

    @torch.no_grad()
    def prepare(self, P: torch.Tensor) -> None:
        self._recent = P.reshape(len(P), -1)
        if self._ready:
            return
        self._seed_centres(self._recent)
        self.initialised.fill_(True)
        self._ready = True
        self.epoch_start()

    @torch.no_grad()
    def _seed_centres(self, flat: torch.Tensor) -> None:
        gen = torch.Generator().manual_seed(self.seed)
        if self.centre_init == "kmeans++":
            pick = kmeanspp_rows(flat, self.n_units, gen).to(flat.device)
        else:
            pick = torch.randint(len(flat), (self.n_units,), generator=gen).to(flat.device)
        noise = 1e-3 * torch.randn(self.centres.shape, generator=gen).to(flat.device)
        self.centres.copy_(flat[pick] + noise)

    @torch.no_grad()
    def _centre_spacing(self) -> torch.Tensor:
        d = torch.cdist(self.centres, self.centres)
        d.fill_diagonal_(float("inf"))
        return d.min(1).values.mean()

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)
        self._ready = bool(self.initialised)

    @torch.no_grad()
    def epoch_start(self) -> None:
        if not self._ready:
            return
        r2_sum, r2_count = self._r2.tolist()
        if r2_count:
            scale = torch.tensor(r2_sum / r2_count).sqrt()
            # Centres seeded while the members were still near-uniform sit on top of each other
            # and make every unit alike: re-seed them from the latest structured vectors.
            if self.reseed and self.n_units >= 2 and self._centre_spacing() < 0.1 * scale:
                self._seed_centres(self._recent)
        elif self.n_units >= 2:
            scale = self._centre_spacing()
        else:
            return
        self.gamma.copy_(scale.clamp_min(1e-3).expand_as(self.gamma))
        self._r2.zero_()

    def features(self, P: torch.Tensor) -> torch.Tensor:
        flat = P.reshape(len(P), -1)
        r2 = torch.cdist(flat, self.centres).pow(2)
        if self.training and torch.is_grad_enabled():
            self._r2[0] += r2.detach().min(1).values.sum()
            self._r2[1] += len(r2)
        exponent = -r2 / (2 * self.gamma ** 2)
        if self.row_norm == "sum":
            return torch.softmax(exponent, dim=1)
        h = torch.exp(exponent)
        return self.norm(h) if self.norm is not None else h

    def predict_proba(self, P: torch.Tensor) -> torch.Tensor:
        _check_probs(P)
        return torch.softmax(self.features(P) @ self.alpha / self.temperature, dim=1)

    def update(self, opt) -> None:
        """Algorithm 2's step of alpha and C, each centre's move capped at gamma if bounded."""
        if self.centre_step == "plain":
            return opt.step()
        with torch.no_grad():
            self._centres_before.copy_(self.centres)
        opt.step()
        with torch.no_grad():
            moved = self.centres - self._centres_before
            widths = (moved.norm(dim=1) / self.gamma).clamp_min(1.0)
            self.centres.copy_(self._centres_before + moved / widths[:, None])


@torch.no_grad()
def kmeanspp_rows(x: torch.Tensor, k: int, gen: torch.Generator) -> torch.Tensor:
    """k row indices of x by k-means++ seeding (Arthur & Vassilvitskii 2007): the first uniform,
    each next one drawn with probability proportional to its squared distance to the nearest
    pick (uniform again once every row coincides with a pick, e.g. k > distinct rows)."""
    x = x.cpu().double()
    picks = [int(torch.randint(len(x), (1,), generator=gen))]
    d2 = (x - x[picks[0]]).pow(2).sum(1)
    for _ in range(k - 1):
        weights = d2 if float(d2.sum()) > 0 else torch.ones_like(d2)
        picks.append(int(torch.multinomial(weights, 1, generator=gen)))
        d2 = torch.minimum(d2, (x - x[picks[-1]]).pow(2).sum(1))
    return torch.tensor(picks)


class MoEGateHead(TrainableHead):
    """Mixture-of-Experts: a linear gate on D_i gives per-sample weights g_i over the M members;
    the output is the gated sum sum_j g_ij p_ij (a mixture, so it stays in the simplex)."""

    def __init__(self, n_members: int, n_classes: int, temperature: float = 1.0,
                 lr: float = _D["lr_alpha"], optimizer: str = _D["head_optimizer"]):
        super().__init__(lr, optimizer, n_classes)
        if temperature <= 0 or not math.isfinite(temperature):
            raise ConfigError("temperature", temperature, "a number T > 0")
        self.temperature = temperature
        self.n_hypotheses = n_members     # the hypotheses of D it reads (members, then plug-ins)
        self.gate = nn.Linear(n_members * n_classes, n_members)
        nn.init.zeros_(self.gate.weight)        # start as the probability average
        nn.init.zeros_(self.gate.bias)

    def predict_proba(self, P: torch.Tensor) -> torch.Tensor:
        _check_probs(P)
        g = torch.softmax(self.gate(P.reshape(len(P), -1)) / self.temperature, dim=1)
        return (g.unsqueeze(-1) * P).sum(1)


def beats_constant_guess(probs: torch.Tensor, y) -> bool:
    """Whether class probabilities `probs` (N, C) are right on more of the rows labelled `y` than
    the constant guess, their majority class, is: integer counts, compared exactly. A row's
    decision is its first most probable class, as in the scores."""
    y = torch.as_tensor(y, device=probs.device)
    right = int((probs.argmax(1) == y).sum())
    return right > int(torch.bincount(y, minlength=probs.shape[1]).max())


def class_prior(y, n_classes: int) -> torch.Tensor:
    """The class frequencies of labels `y`: the constant guess's probabilities."""
    counts = torch.bincount(torch.as_tensor(y).cpu(), minlength=n_classes).double()
    return counts / counts.sum()


def logit_average(logits: torch.Tensor, temperature: float = 1.0) -> torch.Tensor:
    """"Mean" in the paper: average the members' logits, then one softmax (the CE centroid)."""
    return torch.softmax(logits.mean(1) / temperature, dim=1)


def probability_average(P: torch.Tensor) -> torch.Tensor:
    return P.mean(1)


# The temperatures fit_temperature searches: log10 tau in [-3, 3] in steps of 0.05 (12% in tau).
# Wide, because an s-BFN head trained at T = 3 can be far too flat (wine, 3 epochs: its NLL
# minimum lay below tau = 10^-1.5, the range this search once had).
TEMPERATURES = torch.logspace(-3, 3, 121, dtype=torch.float64)


def fit_temperature(scores: torch.Tensor, y: torch.Tensor) -> float:
    """The tau > 0 among TEMPERATURES minimising the NLL of softmax(scores / tau) on rows labelled
    y (Guo et al. 2017's temperature scaling; scores (N, C): logits, or log-probabilities, which
    differ from the logits by a constant per row)."""
    scores = scores.double()
    y = torch.as_tensor(y, device=scores.device)
    nll = torch.stack([F.cross_entropy(scores / t, y) for t in TEMPERATURES.tolist()])
    return float(TEMPERATURES[int(torch.argmin(nll))])


def finite_minimum(tau: float) -> bool:
    """Whether fit_temperature's tau is an NLL minimum inside its range: at an end, the NLL
    still falls beyond it -- towards tau -> 0 where every row is ranked right (a small
    validation part that the head separates) -- and there is no finite temperature to fit."""
    return TEMPERATURES[0] < tau < TEMPERATURES[-1]


def temperature_scaled(probs: torch.Tensor, tau: float) -> torch.Tensor:
    """softmax(log p / tau): probabilities p (N, C) at temperature tau (their logits / tau)."""
    return torch.softmax(torch.log(probs.double().clamp_min(PROB_FLOOR)) / tau, 1).to(probs.dtype)


def tune_temperature(logits: torch.Tensor, y: torch.Tensor) -> float:
    """The T of logit averaging ("Mean", tuned T) on a validation split: fit_temperature of the
    members' mean logits."""
    return fit_temperature(logits.mean(1), y)
