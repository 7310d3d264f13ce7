"""ERMI-regularised (multinomial) logistic regression: FERMI and DP-FERMI."""

from __future__ import annotations

import warnings
from numbers import Integral, Real
from typing import NamedTuple

import numpy as np
from sklearn.base import BaseEstimator, _fit_context
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions

from fairest.ermi import _defaults
from fairest.ermi._auto import warn_degenerate
from fairest.ermi._dp import (
    calibrate_accounted,
    calibrate_privacy,
    check_clip_mode,
    closed_form_report,
    count_noise_multiplier,
    privatize_counts,
)
from fairest.ermi._report import log_epochs, progress_hook
from fairest.ermi._solvers import (
    resolve_dual_radius,
    run_full_batch,
    run_sgda,
    sgda_iterations,
)
from fairest.ermi._strata import strata_constants, strata_from_mass
from fairest.ermi._stream import partial_fit_chunk
from fairest.utils._degenerate import plain_label
from fairest.utils._estimator import validate_fit_data
from fairest.utils._linear import LinearClassifierMixin
from fairest.utils._reporting import as_history, log_fit, store_result

__all__ = ["ERMIClassifier"]


class _Built(NamedTuple):
    """``(X, y_codes, groups, strata_codes, weight, strata)``, the strata's weight bound,
    the data's smallest group fraction and the number of strata."""

    problem: tuple
    omega: np.ndarray
    rho_data: float
    n_strata: int


class ERMIClassifier(LinearClassifierMixin, BaseEstimator):
    """Logistic regression with an exponential Renyi mutual information (ERMI) penalty.

    Minimises ``L(theta) + fairness_weight * ERMI(theta) + alpha/2 ||coef||^2`` where L is
    the mean cross-entropy and ERMI the chi-square dependence between the (soft)
    prediction and the sensitive group (demographic parity) or the same within every
    true-label stratum (equalized odds). ERMI is the maximum over an auxiliary matrix W
    of an average of per-sample terms, which gives an unbiased stochastic min-max
    problem (FERMI); its noisy version is differentially private (DP-FERMI). Binary
    targets use one logit, several classes a softmax; any number of groups (several
    sensitive columns define intersectional groups). Prediction is group-blind.

    Parameters
    ----------
    fairness_weight : float or "auto", default="auto"
        Weight lambda >= 0 of the ERMI penalty (0 means no fairness penalty). ERMI's
        scale depends on the data (a chi-square dependence that weighs every group by its
        share of the rows): lambda = 1 more than halves the demographic-parity gap on
        20,000 ACSPublicCoverage rows, barely moves it on all of them, and on Adult leaves
        it near .15 where 8 to 16 bring it near .01. ``"auto"`` picks it from the data:
        the smallest weight (within a factor of about 1.2, searched from 1 by factors of
        4 between 1/256 and 4096, then bisected) whose fit has a train parity gap (the
        demographic-parity difference of the hard predictions, or the equalized-odds
        difference for ``metric="equalized_odds"``: the largest range of a group rate)
        at most half the unconstrained fit's (lambda = 0), with a train accuracy that
        keeps at least half of the unconstrained fit's margin over the majority class
        (a larger weight can shrink a gap by predicting one class ever more often); the
        weight used is ``fairness_weight_``, the gaps and accuracies met on the way
        ``auto_gaps_`` / ``auto_accuracies_``. Where no weight up to 4096 does both, the
        weight of the smallest gap above that accuracy is used, with a
        :class:`~fairest.utils.FairnessWarning` naming the groups that hold the gap. The search
        runs the full-batch solver also for ``solver="sgda"`` (then SGDA fits at the weight
        found); its fits stop at a gradient norm of ``tol * max(1, weight)`` (the penalty's
        gradient, and its rounding, grow with the weight). Private fits (``dp_epsilon``;
        the search would read the sensitive attribute without noise) and
        :meth:`partial_fit` (a stream has no whole training set) use 1.0, the paper's
        default.
    metric : {"demographic_parity", "equalized_odds"}, default="demographic_parity"
        ERMI(Yhat; S) or the conditional ERMI(Yhat; S | Y).
    alpha : float, default=1e-4
        L2 strength on the coefficients (not the intercept). The paper uses none
        (``alpha=0``); a small ridge keeps the full-batch problem well posed. With
        ``fairness_weight=0`` the full-batch fit equals scikit-learn's
        ``LogisticRegression(C=1 / (alpha * n_samples))``.
    solver : {"auto", "full-batch", "sgda"}, default="auto"
        ``"full-batch"``: deterministic, W at its closed-form maximiser (exact FERMI,
        non-private only): Newton's method with the exact Hessian where the parameters
        number at most 1024 and a float32 copy of X fits in 256 MiB (one device), finished
        by L-BFGS where it stalls above ``tol``; L-BFGS alone elsewhere. ``"sgda"``: the
        paper's stochastic gradient descent ascent (Algorithm 1). ``"auto"`` is
        ``"sgda"`` when ``dp_epsilon`` is set and ``"full-batch"`` otherwise.
    max_iter : int, default=1000
        Maximum Newton (and L-BFGS) iterations of the full-batch solver.
    tol : float, default=1e-8
        Full-batch stopping tolerance on the infinity norm of the gradient (L-BFGS also
        stops when the relative decrease of the objective reaches 64 machine epsilons).
    batch_size : int, default=1024
        SGDA minibatch size m (capped at n).
    n_epochs : int, default=50
        SGDA runs ``T = n_epochs * ceil(n / m)`` iterations (fixed, no early stopping).
        The SGDA defaults follow one data-independent rule (see Notes); the paper's
        values are 200 epochs, steps 0.005 / 0.01 and radius = clip = 5.
    learning_rate : float, default=0.1
        Constant descent step eta_theta.
    dual_learning_rate : float or "auto", default="auto"
        Constant ascent step eta_W. ``"auto"`` is ``0.5 / fairness_weight``: the ascent
        direction is lambda-scaled with W-curvature at most ``2 lambda``, so the W step
        contracts towards the maximiser at the same rate for every lambda.
    dual_radius : float or "auto", default="auto"
        Radius R of the Frobenius ball W is projected on (also the bound D of the
        closed-form noise formula). ``"auto"`` is ``2 sqrt(n_classes)``, twice the norm
        of the maximiser at independence (about 1.42 on binary data).
    batching : {"uniform", "shuffle"}, default="uniform"
        A fresh uniform m-subset per step (the theory's sampling) or consecutive blocks
        of a per-epoch permutation (the authors' code; not covered by the accountant).
    return_iterate : {"average", "last", "random"}, default="average"
        SGDA returns the mean of the last ``ceil(T / 2)`` iterates (theta and W; free
        post-processing of the released iterates that steadies private fits: on small
        data it cuts the seed spread of the parity gap about fivefold), the last iterate
        (the paper's experiments), or one drawn uniformly (the analysed one).
    eo_weighting : {"label_prior", "uniform"}, default="label_prior"
        Equalized odds: strata weighted by the label prior (the paper's conditional
        ERMI) or summed unweighted (the authors' code).
    dp_epsilon : float or None, default=None
        Privacy budget epsilon; ``None`` is non-private FERMI.
    dp_delta : float or None, default=None
        Privacy parameter delta of (epsilon, delta)-DP, used only when ``dp_epsilon`` is
        set; ``None`` means ``1 / n**2`` (the authors' choice).
    privacy_unit : {"sensitive", "all"}, default="sensitive"
        Neighbouring data sets differ in one sensitive attribute (the paper's notion), or
        in one whole record (generic clipped DP-SGDA rule, needs per-sample clipping).
    clip_norm : float, default=2.0
        Per-sample clipping norm C of the theta-gradients (private fits only). With
        ``accounting="rdp"`` and ``privacy_unit="sensitive"`` only the lambda-scaled
        ERMI part of each sample's gradient (the part that depends on s) is clipped;
        with ``privacy_unit="all"`` the whole per-sample gradient.
    clip_mode : {"per_sample", "batch", "none"}, default="per_sample"
        Clip every per-sample gradient, the averaged gradient (the authors' 2022 code),
        or nothing. ``accounting="rdp"`` needs ``"per_sample"``.
    lipschitz_constant : float or "auto", default=5.0
        Lipschitz constant L_theta of the probabilities in theta used by the closed-form
        noise formula (``accounting="paper"`` / ``"joint"``; unused by ``"rdp"``);
        ``"auto"`` computes a valid one from the features (``c * max_i ||(1, x_i)||``
        with c = 1/4 binary, sqrt(2)/4 softmax).
    min_group_fraction : float or None, default=None
        Minority fraction of the closed-form noise formula (every group's share is at least this
        in neighbouring data sets); ``None`` is ``(min_r n_r - 1) / n`` (per label
        stratum for equalized odds). A public lower bound may be passed; a value above
        the data's own raises.
    noise_scaling : {"lambda", "paper_text", "authors_code"}, default="lambda"
        How lambda scales the closed-form noise under ``privacy_unit="sensitive"``
        (``accounting="paper"`` / ``"joint"`` only).
    accounting : {"rdp", "joint", "paper"}, default="rdp"
        ``"rdp"`` (needs ``dp-accounting``): a guarantee for everything the fit
        releases (see Notes). ``"paper"`` and ``"joint"`` are the paper's closed form,
        kept to reproduce it, and do not give one: the group frequencies are read
        without noise, the theta noise rests on ``lipschitz_constant``, and
        ``"paper"`` calibrates theta and W each to (epsilon, delta) (``"joint"``
        multiplies both stds by sqrt(2)).
    dual_init : {"zeros", "normal"}, default="zeros"
        Initial W (the paper: zeros; the authors' code: standard normal).
    dtype : {"float64", "float32"}, default="float64"
        Precision of the feature matrix in the SGDA solver: with ``"float32"`` the two
        minibatch products (logits and summed theta-gradient) run in float32, faster on
        CPU; theta, W, the per-sample terms and the noise stay float64,
        and the random streams are the same, so a seed gives the same model up to
        float32 rounding. The full-batch solver is always float64.
    random_state : int, RandomState instance or None, default=None
        Seed of batches, noise and the random iterate (separate streams).
    verbose : int, default=0
        Log the solver outcome after the fit (1), plus a line per SGDA epoch (2), through
        :mod:`logging` at INFO.
    record_history : bool, default=False
        Store ``history_`` (per SGDA iteration: minibatch loss, minibatch saddle value,
        ``||W||_F``).

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    coef_ : ndarray of shape (1, n_features) or (n_classes, n_features)
    intercept_ : ndarray of shape (1,) or (n_classes,)
    groups_ : ndarray of shape (n_groups,)
    W_ : ndarray of shape (n_groups, n_classes) or (n_classes, n_groups, n_classes)
        Final auxiliary matrix (rows: groups, columns: predicted classes); for equalized
        odds one block per true label (in ``classes_`` order). The full-batch solver
        stores the closed-form maximiser.
    sigma_theta_, sigma_w_ : float
        Noise stds actually added to the theta and W updates (0 when non-private).
    noise_multipliers_ : ndarray of shape (2,)
        The stds over the sensitivity of the averaged gradients (theta, W), as used by
        DP-SGD accountants; ``inf`` where the sensitivity is 0, 0 when non-private.
    epsilon_spent_ : float
        The epsilon the accountant certifies for the whole fit (at most ``dp_epsilon``;
        ``accounting="paper"`` / ``"joint"``: ``dp_epsilon`` as claimed by the closed
        form; ``inf`` when non-private).
    privacy_report_ : str
        What the guarantee covers (the releases, the neighbouring relation, the
        sensitivities and noise) and what it assumes.
    min_group_fraction_ : float
        The minority fraction used by the noise formula (``min_group_fraction`` or
        the data's own; ``accounting="rdp"``: the smallest privatised group share).
    delta_ : float or None
    fairness_weight_ : float
        The weight lambda the model was fitted at (``"auto"`` resolved).
    auto_gaps_, auto_accuracies_ : dict
        Only when ``fairness_weight="auto"`` was searched: the train parity gap and
        accuracy of the fit at every weight solved (0.0: the unconstrained fit).
    n_iter_ : int
        SGDA iterations T, or the full-batch solver's iterations (Newton, plus L-BFGS
        where it finished) at ``fairness_weight_``.
    objective_ : float
        Final full-batch objective (NaN for SGDA).
    history_ : dict of ndarray
        Only with ``record_history=True`` and ``solver="sgda"``: ``"batch_loss"``,
        ``"batch_saddle"`` and ``"w_norm"``, one value per SGDA iteration.
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in_,)

    Notes
    -----
    Privacy (``accounting="rdp"``, the default): (1) the group (label-group for
    equalized odds) counts get Gaussian noise whose release alone is (epsilon / 10,
    delta)-DP; the ERMI frequencies and every constant below are computed from the
    noisy counts, so they are public. (2) Each step releases the noisy theta- and
    W-gradients; their sensitivities hold by construction: under
    ``privacy_unit="sensitive"`` only the lambda-scaled ERMI part depends on s, its
    per-sample theta-gradient is clipped at ``clip_norm`` (the loss part is exact and
    gets no noise) and its W-gradient is bounded by the noisy frequencies; under
    ``"all"`` the whole per-sample theta-gradient is clipped and the W-gradient bounded
    with ``dual_radius``. (3) The pair of one step is one Gaussian mechanism (half of its
    budget to each stream); all steps (uniform m-subsets without replacement) and the
    counts are composed by the replace-one RDP accountant of ``dp-accounting`` and the
    smallest noise that meets (epsilon, delta) is used. The returned average, ``W_`` and
    ``min_group_fraction_`` are post-processing. ``batching="shuffle"`` is not covered
    (a warning). At lambda = 0 under ``"sensitive"`` nothing depends on s: no noise.
    The set of group labels, n and the hyper-parameters are assumed public.

    Defaults of the SGDA steps (one data-independent rule, documented in
    ``docs/user_guide/ermi.md``): 50 epochs of batch 1024, theta step 0.1, W step
    ``0.5 / lambda``, W radius ``2 sqrt(l)``, clip 2, tail averaging. On Adult (paper
    protocol) non-private SGDA then matches the full-batch optimum for lambda up to 32,
    and at epsilon = 1 the five seeds differ by at most .004 in error and .015 in the
    parity gap for lambda >= 4 (``benchmarks/ermi_private_frontier.py``).

    References
    ----------
    .. [1] Lowy, A., Gupta, D. and Razaviyayn, M. "Stochastic Differentially Private and
       Fair Learning", ICLR 2023 (DP-FERMI, Algorithm 1, Theorems 3.2-3.4).
    .. [2] Lowy, A., Baharlouei, S., Pavan, R., Razaviyayn, M. and Beirami, A. "A
       Stochastic Optimization Framework for Fair Risk Minimization", TMLR 2022 (FERMI).

    Examples
    --------
    >>> import numpy as np
    >>> from fairest.ermi import ERMIClassifier
    >>> rng = np.random.default_rng(0)
    >>> s = rng.integers(0, 2, 400)
    >>> X = rng.normal(size=(400, 2)) + s[:, None]
    >>> y = (X[:, 0] + rng.normal(size=400) > 0.5).astype(int)
    >>> clf = ERMIClassifier().fit(X, y, sensitive_features=s)
    >>> clf.predict(X[:3]).shape
    (3,)
    >>> clf.fairness_weight_ > 0  # "auto": the weight that halves the train parity gap
    True
    """

    __metadata_request__fit = {"sensitive_features": True}
    _fairness_path = ("fairness_weight", "continuation")  # fairness_path's knob and strategy
    __metadata_request__partial_fit = {"sensitive_features": True}

    _parameter_constraints: dict = {
        "fairness_weight": [Interval(Real, 0, None, closed="left"), StrOptions({"auto"})],
        "metric": [StrOptions({"demographic_parity", "equalized_odds"})],
        "alpha": [Interval(Real, 0, None, closed="left")],
        "solver": [StrOptions({"auto", "full-batch", "sgda"})],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="neither")],
        "batch_size": [Interval(Integral, 1, None, closed="left")],
        "n_epochs": [Interval(Integral, 1, None, closed="left")],
        "learning_rate": [Interval(Real, 0, None, closed="neither")],
        "dual_learning_rate": [Interval(Real, 0, None, closed="left"), StrOptions({"auto"})],
        "dual_radius": [Interval(Real, 0, None, closed="neither"), StrOptions({"auto"})],
        "batching": [StrOptions({"uniform", "shuffle"})],
        "return_iterate": [StrOptions({"last", "random", "average"})],
        "eo_weighting": [StrOptions({"label_prior", "uniform"})],
        "dp_epsilon": [Interval(Real, 0, None, closed="neither"), None],
        "dp_delta": [Interval(Real, 0, 1, closed="neither"), None],
        "privacy_unit": [StrOptions({"sensitive", "all"})],
        "clip_norm": [Interval(Real, 0, None, closed="neither")],
        "clip_mode": [StrOptions({"per_sample", "batch", "none"})],
        "lipschitz_constant": [Interval(Real, 0, None, closed="neither"), StrOptions({"auto"})],
        "min_group_fraction": [Interval(Real, 0, 1, closed="neither"), None],
        "noise_scaling": [StrOptions({"lambda", "paper_text", "authors_code"})],
        "accounting": [StrOptions({"rdp", "paper", "joint"})],
        "dual_init": [StrOptions({"zeros", "normal"})],
        "dtype": [StrOptions({"float64", "float32"})],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
        "record_history": ["boolean"],
    }

    def __init__(
        self,
        fairness_weight=_defaults.FAIRNESS_WEIGHT,
        *,
        metric="demographic_parity",
        alpha=_defaults.ALPHA,
        solver="auto",
        max_iter=_defaults.FULL_BATCH_MAX_ITER,
        tol=_defaults.FULL_BATCH_TOL,
        batch_size=_defaults.BATCH_SIZE,
        n_epochs=_defaults.N_EPOCHS,
        learning_rate=_defaults.LEARNING_RATE,
        dual_learning_rate=_defaults.DUAL_LEARNING_RATE,
        dual_radius=_defaults.DUAL_RADIUS,
        batching="uniform",
        return_iterate="average",
        eo_weighting="label_prior",
        dp_epsilon=None,
        dp_delta=None,
        privacy_unit="sensitive",
        clip_norm=_defaults.CLIP_NORM,
        clip_mode="per_sample",
        lipschitz_constant=_defaults.LIPSCHITZ_CONSTANT,
        min_group_fraction=None,
        noise_scaling="lambda",
        accounting="rdp",
        dual_init="zeros",
        dtype="float64",
        random_state=None,
        verbose=0,
        record_history=False,
    ):
        self.fairness_weight = fairness_weight
        self.metric = metric
        self.alpha = alpha
        self.solver = solver
        self.max_iter = max_iter
        self.tol = tol
        self.batch_size = batch_size
        self.n_epochs = n_epochs
        self.learning_rate = learning_rate
        self.dual_learning_rate = dual_learning_rate
        self.dual_radius = dual_radius
        self.batching = batching
        self.return_iterate = return_iterate
        self.eo_weighting = eo_weighting
        self.dp_epsilon = dp_epsilon
        self.dp_delta = dp_delta
        self.privacy_unit = privacy_unit
        self.clip_norm = clip_norm
        self.clip_mode = clip_mode
        self.lipschitz_constant = lipschitz_constant
        self.min_group_fraction = min_group_fraction
        self.noise_scaling = noise_scaling
        self.accounting = accounting
        self.dual_init = dual_init
        self.dtype = dtype
        self.random_state = random_state
        self.verbose = verbose
        self.record_history = record_history

    # ------------------------------------------------------------------ fit

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, *, sensitive_features=None, sample_weight=None):
        """Fit the model.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training data.
        y : array-like of shape (n_samples,)
            Class labels (two or more classes).
        sensitive_features : array-like of shape (n_samples,) or (n_samples, k), default=None
            Group membership (every group needs at least 2 samples); ``None`` means one
            group (with a warning): the penalty vanishes and the plain model is fitted.
        sample_weight : array-like of shape (n_samples,), default=None
            Weights of the loss and of all ERMI frequencies. Not supported together with
            ``dp_epsilon`` (the sensitivity would depend on them).

        Returns
        -------
        self : ERMIClassifier
            The fitted estimator.
        """
        data = validate_fit_data(self, X, y, sensitive_features, sample_weight, accept_sparse=True)
        self.__dict__.pop("_stream_state", None)  # a fit starts a new stream
        solver, private, y_codes, weight = self._validate(data)
        built, lam, auto = self._build(data, y_codes, weight, sensitive_features, private)
        privacy, root_seed, radius, problem = self._privacy(built, lam, private)
        result = self._solve(problem, lam, auto, solver, privacy, root_seed, radius)
        self._store(result, lam, auto, full_batch=solver != "sgda")
        if sensitive_features is not None:
            warn_degenerate(self, data, y_codes, problem[3], result.theta, auto, stacklevel=3)
        return self

    def _validate(self, data):
        """Checks beyond ``validate_fit_data`` (sets ``classes_``, ``groups_``); returns the
        solver, whether the fit is private, the class codes and the weights (mean 1)."""
        private = self.dp_epsilon is not None
        solver = self.solver
        if solver == "auto":
            solver = "sgda" if private else "full-batch"
        if private and solver == "full-batch":
            raise ValueError(
                "solver='full-batch' is non-private; use solver='sgda' with dp_epsilon."
            )
        if private:
            check_clip_mode(self.accounting, self.privacy_unit, self.clip_mode)
        self.classes_, y_codes = np.unique(data.y, return_inverse=True)
        if self.classes_.size < 2:
            raise ValueError(
                "ERMIClassifier needs samples of at least 2 classes in the data, but the "
                f"data contains only one class: {plain_label(self.classes_[0])!r}."
            )
        self.groups_ = data.group_labels
        weight = data.sample_weight
        if private and not np.all(weight == weight[0]):
            raise ValueError(
                "sample_weight is not supported with dp_epsilon (it changes the sensitivity)."
            )
        return solver, private, y_codes, weight / weight.mean()

    def _build(self, data, y_codes, weight, sensitive_features, private):
        """The problem (:class:`_Built`) and the fairness weight; ``fairness_weight="auto"``
        runs the full-batch search here, returned as ``auto`` (its model at that weight)."""
        n_classes, n_groups = self.classes_.size, len(self.groups_)
        lam = self._weight(sensitive_features is not None, private, stream=False)
        equalized_odds = self.metric == "equalized_odds"
        n = data.X.shape[0]
        strata_codes = y_codes.astype(np.int32) if equalized_odds else np.zeros(n, np.int32)
        n_strata = n_classes if equalized_odds else 1
        strata, omega, rho_data = strata_constants(
            strata_codes, data.groups, weight, n_strata, n_groups, self.eo_weighting
        )
        problem = (data.X, y_codes, data.groups, strata_codes, weight, strata)
        auto = None
        if lam == "auto":  # non-private: the full-batch search, whatever the solver
            auto = run_full_batch(
                *problem,
                n_classes=n_classes,
                fairness_weight="auto",
                alpha=self.alpha,
                tol=self.tol,
                max_iter=self.max_iter,
                progress=progress_hook(self, "solve"),
            )
            lam = auto.fairness_weight
        return _Built(problem, omega, rho_data, n_strata), lam, auto

    def _privacy(self, built, lam, private):
        """Calibrate the noise (or record there is none; sets the privacy attributes); the
        problem comes back because the accounted calibration may change its strata."""
        problem, omega, rho_data = built.problem, built.omega, built.rho_data
        X, _, groups, strata_codes, _, _ = problem
        n_classes, n_groups = self.classes_.size, len(self.groups_)
        m, n_iter = sgda_iterations(X.shape[0], self.batch_size, self.n_epochs)
        root_seed = int(check_random_state(self.random_state).randint(2**31))
        radius = resolve_dual_radius(self.dual_radius, n_classes)
        if private and self.accounting == "rdp":
            strata, omega, privacy = self._calibrate_accounted(
                strata_codes, groups, built.n_strata, n_groups, m, n_iter, lam, root_seed, radius
            )
            problem = (*problem[:5], strata)
        else:
            privacy = calibrate_privacy(
                X,
                m,
                n_iter,
                epsilon=self.dp_epsilon,
                delta=self.dp_delta,
                data_min_group_fraction=rho_data,
                min_group_fraction=self.min_group_fraction,
                fairness_weight=lam,
                weight_max=float(np.max(omega)),
                binary=n_classes == 2,
                privacy_unit=self.privacy_unit,
                clip_mode=self.clip_mode,
                clip_norm=self.clip_norm,
                lipschitz_constant=self.lipschitz_constant,
                dual_radius=radius,
                noise_scaling=self.noise_scaling,
                accounting=self.accounting,
                stacklevel=5,
            )
        self.min_group_fraction_, self.delta_ = privacy.min_group_fraction, privacy.delta
        self.epsilon_spent_ = privacy.epsilon_spent
        self.sigma_theta_, self.sigma_w_ = privacy.sigma_theta, privacy.sigma_w
        self.noise_multipliers_ = privacy.noise_multipliers
        self.privacy_report_ = privacy.report or closed_form_report(self, private)
        return privacy, root_seed, radius, problem

    def _solve(self, problem, lam, auto, solver, privacy, root_seed, radius):
        """Run the solver at fairness weight ``lam`` (the full-batch solvers: ``auto``'s
        model when the search already solved it), warning when it did not converge."""
        if solver == "sgda":
            return run_sgda(
                *problem,
                n_classes=self.classes_.size,
                fairness_weight=lam,
                seed=root_seed,
                alpha=self.alpha,
                batch_size=self.batch_size,
                n_epochs=self.n_epochs,
                learning_rate=self.learning_rate,
                dual_learning_rate=self.dual_learning_rate,
                dual_radius=radius,
                clip_sample=privacy.clip_sample,
                clip_batch=privacy.clip_batch,
                clip_fairness=privacy.clip_fairness,
                sigma_theta=privacy.sigma_theta,
                sigma_w=privacy.sigma_w,
                batching=self.batching,
                return_iterate=self.return_iterate,
                dual_init=self.dual_init,
                dtype=self.dtype,
                record_history=self.record_history or bool(self.verbose),
                progress=progress_hook(self, "epoch"),
            )
        result = auto or run_full_batch(
            *problem,
            n_classes=self.classes_.size,
            fairness_weight=lam,
            alpha=self.alpha,
            tol=self.tol,
            max_iter=self.max_iter,
        )
        if not result.converged:
            scale = "" if auto is None else f" * max(1, fairness_weight_={lam:.4g})"
            warnings.warn(
                f"The full-batch solver stopped after {result.n_iter} iterations with "
                f"gradient norm {result.grad_norm:.2e} > tol={self.tol}{scale}; increase "
                "max_iter or alpha.",
                ConvergenceWarning,
                stacklevel=3,
            )
        return result

    def _store(self, result, lam, auto, full_batch):
        """The fitted model, ``n_iter_`` and ``history_`` (:func:`store_result`), logs."""
        if full_batch:  # the full-batch solvers record no iterations
            store_result(
                self,
                n_iter=result.n_iter,
                message="full batch at fairness_weight %.4g: %d iterations, objective %.6g, "
                "gradient norm %.2e",
                args=(lam, result.n_iter, result.objective, result.grad_norm),
            )
        else:
            store_result(self, n_iter=result.n_iter, history=result.history)
            if self.verbose:
                log_epochs(self, as_history(result.history), result.n_iter)
        self.objective_ = result.objective
        self.intercept_ = result.theta[0].copy()
        self.coef_ = result.theta[1:].T.copy()
        self.W_ = result.W if self.metric == "equalized_odds" else result.W[0]
        self.fairness_weight_ = float(lam)
        if auto is not None:
            self.auto_gaps_ = dict(auto.auto.gaps)
            self.auto_accuracies_ = dict(auto.auto.accuracies)
            gaps = ", ".join(f"{w:.3g}: {gap:.4f}" for w, gap in auto.auto.gaps.items())
            log_fit(self, "fairness_weight='auto': %.4g (train parity gaps %s)", lam, gaps)

    def _weight(self, grouped: bool, private: bool, stream: bool):
        """The fairness weight of a fit: 0 without groups, ``"auto"`` where it is
        searched, the fixed weight of a private fit or a stream, else the number given."""
        if not grouped:
            return 0.0
        if self.fairness_weight != "auto":
            return float(self.fairness_weight)
        return _defaults.FIXED_FAIRNESS_WEIGHT if private or stream else "auto"

    @_fit_context(prefer_skip_nested_validation=True)
    def partial_fit(
        self, X, y, *, sensitive_features=None, sample_weight=None, classes=None, groups=None
    ):
        """One SGDA epoch over the chunk ``(X, y)``, continuing the previous calls.

        The first call starts SGDA as :meth:`fit` does (same seed, same ``W0``, same
        random streams: one call on the whole data equals ``fit`` with ``n_epochs=1``);
        every later call resumes from the last iterate ``(theta, W)`` of the previous one
        and draws from its own streams (``fold_in`` of the root key by the call number).
        ``n_epochs`` is not used: one call is one pass over its chunk, with
        ``min(batch_size, n_chunk)`` rows per step. ``coef_``, ``intercept_`` and ``W_``
        are the ``return_iterate`` of the call's iterates (the tail average by default);
        the next call resumes from the last iterate, not from that average.

        The ERMI frequencies ``p_S|t(r)`` are running estimates: the weighted group
        (label-group for equalized odds) totals of every chunk seen so far, this one
        included. ``min_group_fraction_`` is likewise the stream's so far. Private fits
        (``dp_epsilon``) are refused: the accountant composes the steps of one fit over
        one data set of known size n (the subsampling rate m / n, group counts privatised
        once); a stream of chunks has neither, and a row seen in several calls is
        spent several times, so no budget would hold.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            The chunk's rows.
        y : array-like of shape (n_samples,)
            Their labels, all in ``classes``.
        sensitive_features : array-like of shape (n_samples,) or (n_samples, k), default=None
            Their group labels, all in the stream's vocabulary (``groups``, or the first
            chunk's labels).
        sample_weight : array-like of shape (n_samples,), default=None
            Weights of the chunk's loss (normalised to mean 1 within the chunk) and of the
            running group frequencies (as given).
        classes : array-like, default=None
            Every class label of the stream; required on the first call.
        groups : array-like, default=None
            Every group label of the stream, on the first call; default: the first chunk's
            labels (a later chunk with another label raises ``ValueError``).

        Returns
        -------
        self : ERMIClassifier
            The estimator, updated.
        """
        return partial_fit_chunk(self, X, y, sensitive_features, sample_weight, classes, groups)

    def _calibrate_accounted(
        self, strata_codes, groups, n_strata, n_groups, batch_size, n_iter, lam, root_seed, radius
    ):
        """``accounting="rdp"``: privatised group counts, then the accounted noise.

        The cell counts get Gaussian noise from their own random stream (spawned from
        the fit's root seed); the ERMI frequencies, the stratum weights and the W
        sensitivity are computed from the noisy counts only, so they are public.
        """
        n = strata_codes.shape[0]
        delta = float(self.dp_delta) if self.dp_delta is not None else 1.0 / n**2
        counts = np.bincount(strata_codes * n_groups + groups, minlength=n_strata * n_groups)
        counts = counts.reshape(n_strata, n_groups).astype(np.float64)
        if self.min_group_fraction is not None:
            n_t = counts.sum(axis=1, keepdims=True)
            fractions = np.where(counts > 0, (counts - 1) / n_t, np.inf)
            if self.min_group_fraction > np.min(fractions) + 1e-12:
                raise ValueError(
                    f"min_group_fraction={self.min_group_fraction} exceeds the data's own "
                    f"minority fraction (min_r n_r - 1) / n = {np.min(fractions):.6g}."
                )
        count_multiplier = count_noise_multiplier(float(self.dp_epsilon), delta)
        rng = np.random.default_rng(np.random.SeedSequence([root_seed, 23]))
        noisy = privatize_counts(counts, count_multiplier, rng)
        if not np.any(noisy):
            raise ValueError(
                "every privatised group count is below 1: the data set is too small for "
                f"dp_epsilon={self.dp_epsilon}."
            )
        strata, omega = strata_from_mass(noisy, self.eo_weighting)
        privacy = calibrate_accounted(
            n,
            batch_size,
            n_iter,
            epsilon=float(self.dp_epsilon),
            delta=delta,
            count_multiplier=count_multiplier,
            inv_sqrt_p=strata[0],
            omega=omega,
            fairness_weight=lam,
            privacy_unit=self.privacy_unit,
            clip_mode=self.clip_mode,
            clip_norm=self.clip_norm,
            dual_radius=radius,
            batching=self.batching,
            stacklevel=4,
        )
        return strata, omega, privacy

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = True
        tags.input_tags.sparse = True  # scipy sparse X is never densified (_kernels._sparse)
        tags.non_deterministic = self.solver == "sgda" and self.random_state is None
        return tags
