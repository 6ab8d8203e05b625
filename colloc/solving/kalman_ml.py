"""``KalmanML``: exact maximum likelihood of a linear stochastic model, as a method object.

``co.solve(problem, co.KalmanML())`` on a :class:`colloc.StochasticProblem` maximises the
likelihood of the record by the Kalman filter's prediction-error decomposition
(:func:`colloc.kalman.maximum_likelihood`: exact gradient, L-BFGS-B or IPOPT, then Newton
steps) and returns a :class:`colloc.Result` judged like every other: the verdict on the
standardised one-step innovations, a parameter on a search-range bound a failure, intervals
on the parameter's own scale, and a Ljung–Box check of the innovations' whiteness.

The standard errors are the inverse observed Fisher information (the Hessian of the negative
log-likelihood at the estimate) of the parameters off their bounds.  They assume that the
model is the process that made the data: Gaussian white disturbances and noise, so white
innovations; ``KalmanML(errors="robust")`` reports per parameter the larger of them and the
sandwich covariance, which holds when the noise model is wrong (``colloc.inference.kalman.robust``).
The Ljung–Box line of the report says whether the record agrees; on a long record
it rejects structure too small to matter, and structure that changes along the record, which no
model fitted to it could use.  The line after it says how much the innovations' own past predicts
out of sample: an AR, cross-validated over five blocks of the record (its log-score gain in nats a
sample and the share of variance it explains), against :data:`PREDICTABLE_GAIN_MAX`.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..base.errors import OptionsError
from ..base.versions import versions
from ..definition.stochastic import StochasticProblem
from ..definition.trial import Trial
from ..results.report import finalize
from ..results.result import Estimate, Result
from ..signals.forecast import innovation_predictability, ljung_box
from ..transcription.methods import AbstractMethod

if TYPE_CHECKING:
    from .ipopt import Ipopt

__all__ = ["KalmanML", "on_one_grid"]

#: Lags of the Ljung–Box check of the innovations (at 100 Hz: the first 0.2 s).
LJUNG_BOX_LAGS = 20
#: Order of the AR that predicts the innovations from their own past, cross-validated over
#: :data:`PREDICTABLE_FOLDS` contiguous blocks of the record
#: (:func:`colloc.signals.forecast.innovation_predictability`; at 100 Hz the last 0.2 s).
PREDICTABLE_ORDER = 20
PREDICTABLE_FOLDS = 5
#: Log score (nats a sample) that AR may add out of sample before the report says the innovations
#: leave structure the model could have used.  Calibrated on records simulated from the fitted
#: real-sway model of the twelve shipped BDS trials (``benchmarks/real_sway_whiteness.py``): held out
#: (AR fitted to the innovations of the fitted 30 s, scored on the next 30 s) at most 0.0015 over 240
#: records filtered by their own model and 0.0011 over 48 refitted ones (95 % points below 0), against
#: 0.0085–0.042 on the real records; this check (five blocks of a 30 s fit) in the README's table.
#: 0.005 is a 1 % share of the innovations' variance (1 − e^(−2·0.005)).
PREDICTABLE_GAIN_MAX = 0.005
#: Largest Newton decrement of the exact likelihood at the estimate of the steady-state one that is
#: accepted (nats; ``colloc.inference.kalman.estimation.exact_newton_decrement``): the convergence threshold
#: of :func:`colloc.kalman.maximum_likelihood` (``CONVERGED_DECREMENT``); the estimate is then within
#: √(2·0.005) = 0.1 standard errors of the exact optimum.  Beyond it the fit is repeated with the exact
#: filter.
STEADY_DECREMENT = 5e-3
#: Fits :meth:`KalmanML._fits` keeps (a process's last few; each is a handful of small results).
REMEMBERED_FITS = 16
_FITS_MEMO: OrderedDict = OrderedDict()
#: With several starts each start's L-BFGS-B search runs first; one that ends more than this above
#: the best search's NLL (nats) is not finished (no Newton steps, no Hessian): the likelihood-ratio
#: test rejects such a point by far (:data:`AMBIGUOUS_NLL`), and on the shipped BDS records the start
#: that goes wrong ends some 10⁴ above (K_P and K_D on their bounds), or, since a search steps back
#: from an unstable loop (``colloc.inference.kalman.estimation._outside``), 59-130 above (the first
#: start of PD-delay on BDS00001-06's 57.5 s windows; on BDS00002 with τ on its bound).  A search stalled on
#: the ``q_d``–``B`` ridge ends up to 8.5 above the optimum its Newton steps then reach (BDS00012's
#: third start, 13 standard errors out in ``B``), so the margin is twice that.
SEARCH_MARGIN = 20.0
#: Another optimum whose NLL is within this of the best is not told apart by the record: half the
#: 95 % point of χ² with one degree of freedom (3.84/2), the likelihood-ratio test's threshold.
AMBIGUOUS_NLL = 1.92


def _other_optima(best, rest, names) -> list[dict]:
    """The fits of ``rest`` that succeeded at an optimum distinct from ``best``'s: some parameter
    more than 3 of ``best``'s standard errors (or 1 % where it has none) away.  A fit of a nested
    model (fewer parameters) is compared on the parameters it has."""
    out: list[dict[str, Any]] = []
    for fit in rest:
        if not fit.success:
            continue
        shared = [k for k in names if k in fit.parameters]
        apart = []
        for k in shared:
            a, b = float(best.parameters[k]), float(fit.parameters[k])
            se = best.standard_errors.get(k, np.nan)
            tol = 3 * se if np.isfinite(se) and se > 0 else 0.01 * max(abs(a), 1e-12)
            if abs(a - b) > tol:
                apart.append(k)
        if apart and all(any(abs(o["parameters"].get(k, np.nan) - fit.parameters[k])
                             > 1e-6 * max(1.0, abs(fit.parameters[k])) for k in shared) for o in out):
            out.append({"nll": float(fit.nll), "parameters": {k: float(v) for k, v in fit.parameters.items()},
                        "apart": apart})
    return out


def _same_basin(found, fit, names) -> bool:
    """``found`` (a search's end) lies within one of ``fit``'s standard errors of its optimum in every
    parameter (1 % where it has none): the same basin, not worth finishing again."""
    if not fit.success:
        return False
    for k in names:
        a, b = float(fit.parameters[k]), float(found.parameters[k])
        se = fit.standard_errors.get(k, np.nan)
        tol = se if np.isfinite(se) and se > 0 else 0.01 * max(abs(a), 1e-12)
        if abs(a - b) > tol:
            return False
    return True


def on_one_grid(trial: Trial, columns: Sequence[str], who: str = "KalmanML") -> Trial:
    """``trial`` on one evenly spaced time grid, for the Kalman likelihood.

    Empty cells (``missing="allow"``) stay missing.  With ``missing="allow"`` a hole in time of a
    whole number of sample steps is rows lost: they come back as missing samples.  Anything
    else not on the grid is refused, naming the step."""
    time_ = np.asarray(trial.time, dtype=float)
    steps = np.diff(time_)
    dt = float(np.median(steps))
    whole = np.rint(steps / dt)
    off = np.flatnonzero((np.abs(steps - whole * dt) > 1e-3 * dt) | (whole < 1)
                         | ((whole > 1) & (trial.missing != "allow")))
    if off.size:
        i = int(off[0])
        hint = (f" (a hole of {int(whole[i]) - 1} samples: --missing allow takes lost rows as missing samples)"
                if whole[i] > 1 and abs(steps[i] - whole[i] * dt) <= 1e-3 * dt else "")
        raise OptionsError(f"{who}: trial '{trial.name}' is not evenly sampled (the step from "
                           f"t = {time_[i]:.6g} s to {time_[i + 1]:.6g} s is not {dt:.6g} s){hint}; the "
                           "Kalman likelihood here needs one sample rate")
    if np.all(whole == 1):
        return trial
    at = np.concatenate([[0], np.cumsum(whole).astype(int)])
    filled = {}
    for c in columns:
        column = np.full(at[-1] + 1, np.nan)
        column[at] = np.asarray(trial[c], dtype=float)
        filled[c] = column
    return Trial(time_[0] + dt * np.arange(at[-1] + 1), filled, name=trial.name, missing="allow")


def _free_simulation_notes(check: dict) -> list[str]:
    """One line per output of the free-simulation check, for the report."""
    if "skipped" in check:
        return [f"free simulation check: skipped ({check['skipped']})"]
    lines = []
    for name, per in check["outputs"].items():
        parts = []
        for stat, label in (("rms", "RMS"), ("mean_speed", "mean speed"), ("mean_power_frequency", "MPF")):
            v = per[stat]
            lo, hi = v["interval"]
            parts.append(f"{label} {v['measured']:.3g} [{lo:.3g}, {hi:.3g}] {v['unit']}".rstrip()
                         + ("" if v["inside"] else " OUTSIDE"))
        spec = per["spectrum"]
        parts.append(f"spectrum inside the envelope in {spec['bands_inside']} of {spec['bands']} bands")
        lines.append(f"free simulation of {name} ({check['draws']} draws of the fitted model, 95 % predictive "
                     "intervals): " + "; ".join(parts))
    return lines


@dataclass(frozen=True)
class KalmanML(AbstractMethod):
    """Kalman-filter maximum likelihood of a :class:`colloc.StochasticProblem`.

    Parameters
    ----------
    optimizer : {"lbfgsb", "ipopt"}
        See :func:`colloc.kalman.maximum_likelihood` (default L-BFGS-B with the compiled exact
        gradient, then Newton steps).
    max_iter : int
        Optimizer iterations.
    hessian : {"limited-memory", "exact"}
        IPOPT's Hessian (``optimizer="ipopt"``).
    compiled : bool
        Compile the gradient to C (cached on disk) where a compiler exists.
    transient : "auto", int or None
        The steady-state likelihood (:func:`colloc.kalman.maximum_likelihood`'s ``transient``):
        the filter's covariance is updated until it settles (``"auto"``, the default: the transient
        chosen at the start and again where L-BFGS-B ends) and held after, O(n²) a sample instead of
        O(n³).  With several starts every start's L-BFGS-B search runs first, and one that ends
        more than :data:`SEARCH_MARGIN` above the best, or within a standard error of an optimum
        already finished, is not finished.  At the
        estimate the exact filter's gradient is taken: if one Newton step on the exact likelihood
        would lower it by more than :data:`STEADY_DECREMENT`, the fit is repeated with the exact
        filter from there.  None: the exact filter throughout.
    errors : {"model", "robust"}
        The standard errors: ``"model"`` (the default), the inverse observed Fisher information,
        right when the model's innovations are white and Gaussian; ``"robust"``, per parameter the
        larger of that and the sandwich H⁻¹JH⁻¹, J the per-sample scores' long-run covariance
        (Newey–West weights over a bandwidth read from the scores' autocorrelation;
        :func:`colloc.inference.kalman.robust.robust_covariance`), right also when the noise model is
        not (a real record's).  With ``"robust"`` the model-based, sandwich and reported standard
        errors are in ``info["robust_standard_errors"]``; the report says which the table shows.
    free_draws : int
        Free simulations of the fitted model for the free-simulation check (0: none).  The
        record's RMS, mean speed, mean power frequency and band powers are set against their
        95 % predictive intervals over the draws (:func:`colloc.kalman.free_simulation_check`;
        ``info["free_simulation"]``, a note, and a ``free_simulation_outside`` warning).
    finish_all : bool
        With several starts: finish every start whose search ends within :data:`SEARCH_MARGIN` of
        the lowest and outside the basins already finished (True, the default), or only from the
        lowest search on until one fit succeeds (False: what :func:`colloc.select_model` asks of its
        candidates, whose held-out scores need a fit, not the list of other optima; on the shipped
        BDS records the starts' searches stall on the ``q_d``–``B`` ridge, 9–15 standard errors out,
        and two or three of them are often finished at one optimum).
    """

    optimizer: str = "lbfgsb"
    max_iter: int = 200
    hessian: str = "limited-memory"
    compiled: bool = True
    transient: str | int | None = "auto"
    free_draws: int = 200
    errors: str = "model"
    finish_all: bool = True
    name: str = "kalman-ml"

    def __post_init__(self):
        if self.errors not in ("model", "robust"):
            raise OptionsError(f"KalmanML(errors={self.errors!r}): 'model' or 'robust'")

    def _fits(self, problem: StochasticProblem, lgm, yc: np.ndarray, points: list[dict], missing: bool,
              transient: str | int | None = "method", until_success: bool = False,
              newton_first: bool = False) -> list:
        """:meth:`_searched_fits`, remembered: the same fits asked again (the same model by its
        fingerprint, record, points, bounds, fixed values and options: a nested model's fit that
        was a candidate of its own in :func:`colloc.select_model`, the PD inside the PID) are
        copies of the first's, not fitted again.  The last :data:`REMEMBERED_FITS` are kept."""
        import copy
        import hashlib

        digest = hashlib.blake2b(np.ascontiguousarray(yc, dtype=float).tobytes(), digest_size=16).hexdigest()
        names = list(lgm.parameter_names)
        key = (lgm.fingerprint, digest, repr(yc.shape),
               tuple(tuple(float(point[k]) for k in names) for point in points),
               tuple(tuple(problem.bounds.get(k, (None, None))) for k in names),
               tuple(sorted((problem.fixed or {}).items())), bool(missing),
               self.transient if transient == "method" else transient, bool(until_success), bool(newton_first),
               self.optimizer, self.max_iter, self.hessian, self.compiled)
        if key in _FITS_MEMO:
            _FITS_MEMO.move_to_end(key)
            return copy.deepcopy(_FITS_MEMO[key])
        fits = self._searched_fits(problem, lgm, yc, points, missing, transient, until_success, newton_first)
        _FITS_MEMO[key] = copy.deepcopy(fits)
        while len(_FITS_MEMO) > REMEMBERED_FITS:
            _FITS_MEMO.popitem(last=False)
        return fits

    def _searched_fits(self, problem: StochasticProblem, lgm, yc: np.ndarray, points: list[dict], missing: bool,
                       transient: str | int | None = "method", until_success: bool = False,
                       newton_first: bool = False) -> list:
        """The fits of ``lgm`` to the centred record ``yc`` from ``points`` (the problem's bounds and
        fixed values): with several starts and L-BFGS-B, every start's search first; then, from the
        lowest search on, those that end within :data:`SEARCH_MARGIN` of the best are finished (from
        the search's end, Newton first), unless within a standard error of an optimum already finished
        (the same basin), or, with ``until_success``, once one has succeeded.
        ``transient``: the steady-state likelihood's (default this method's).  ``newton_first`` (one
        point): it is the optimum of a nearby likelihood (the steady-state one's, for the exact
        filter's refit), so the Newton steps go first and L-BFGS-B only where they cannot finish."""
        from ..inference import kalman

        if transient == "method":
            transient = self.transient

        names = list(lgm.parameter_names)

        def fit_from(point, transient, search_only=False, searched=False):
            return kalman.maximum_likelihood(lgm, yc, [point[k] for k in names], search_only=search_only,
                                             searched=searched,
                                             bounds={k: problem.bounds.get(k, (None, None)) for k in names},
                                             fixed=problem.fixed or None, hessian=self.hessian,
                                             max_iter=self.max_iter, optimizer=self.optimizer,
                                             compiled=self.compiled, missing=missing,
                                             transient=None if missing or self.optimizer != "lbfgsb" else transient)

        if len(points) == 1 or self.optimizer != "lbfgsb":
            return [fit_from(point, transient, searched=newton_first and self.optimizer == "lbfgsb")
                    for point in points]
        searched = [fit_from(point, transient, search_only=True) for point in points]
        best_search = min(f.nll for f in searched)
        fits = list(searched)
        finished: list[int] = []
        for i in sorted(range(len(points)), key=lambda j: searched[j].nll):
            found = searched[i]
            if found.nll > best_search + SEARCH_MARGIN:
                found.message += f"; not finished: its search ended {found.nll - best_search:.4g} above another start's"
                continue
            if until_success and any(fits[j].success for j in finished):
                found.message += "; not finished: a start whose search ended lower succeeded"
                continue
            same = next((j for j in finished if _same_basin(found, fits[j], names)), None)
            if same is not None:
                found.message += (f"; not finished: its search ended within a standard error of start {same + 1}'s "
                                  "optimum")
                continue
            fits[i] = fit_from(found.parameters, transient, searched=True)
            finished.append(i)
        return fits

    def solve(self, problem: StochasticProblem, *, solver: Ipopt | None = None,
              guess: Mapping[str, float] | None = None, progress: Callable | None = None) -> Result:
        """The maximum-likelihood fit of ``problem`` from ``guess`` (default its start and its
        further starts), judged (:func:`colloc.results.report.finalize`) as a :class:`colloc.Result`.
        ``solver`` and ``progress`` belong to the method protocol and are not used here (the
        optimiser is this object's ``optimizer``)."""
        if not isinstance(problem, StochasticProblem):
            raise OptionsError(f"KalmanML needs a colloc.StochasticProblem (a linear-Gaussian model), got "
                               f"{type(problem).__name__}; a colloc.Problem is fitted by a transcription")
        if len(problem.trials) != 1:
            raise OptionsError(f"KalmanML fits one record at a time, got {len(problem.trials)} trials "
                               "(colloc batch fits many)")
        from ..inference import kalman  # pandas and the filter's functions: not on the command's start path

        t0 = time.perf_counter()
        trial = on_one_grid(problem.trials[0], problem.outputs)
        dt = float(np.median(np.diff(trial.time)))
        lgm = problem.model_at(dt)
        t_build = time.perf_counter() - t0
        names = list(lgm.parameter_names)
        y = np.column_stack([np.asarray(trial[c], dtype=float) for c in problem.outputs])
        offsets = np.nanmean(y, axis=0) if problem.center else np.zeros(y.shape[1])
        yc = y - offsets
        start = {**problem.start, **problem.fixed, **{k: float(v) for k, v in (guess or {}).items()}}
        # the start, then the problem's other starts (where the likelihood is known to have several
        # optima); the lowest NLL among the fits that succeeded is the estimate
        points = [start] + ([] if guess else [{**start, **extra} for extra in problem.starts])
        log_before, compile_before = len(lgm.compile_log), lgm.compile_s
        missing = bool(np.isnan(y).any())
        nested, nested_fits, best_nested = None, [], None
        if problem.nested is not None and not guess:
            # the nested model first; this one from its estimate (the parameters it lacks at nested_start)
            nested = problem.nested(trial)
            if list(nested.outputs) != list(problem.outputs) or nested.center != problem.center:
                raise OptionsError(f"StochasticProblem {problem.name!r}: its nested model must have the same "
                                   f"outputs and centring (outputs {nested.outputs} against {problem.outputs})")
            sub = nested.model_at(dt)
            base = {**nested.start, **nested.fixed}
            nested_fits = self._fits(nested, sub, yc, [base] + [{**base, **extra} for extra in nested.starts],
                                     missing, until_success=not self.finish_all)
            done = [f for f in nested_fits if f.success]
            if done:
                best_nested = min(done, key=lambda f: f.nll)
                points = [{**start, **{k: v for k, v in best_nested.parameters.items() if k in names},
                           **problem.nested_start}]
        fits = self._fits(problem, lgm, yc, points, missing, until_success=not self.finish_all)
        fell_back = False
        if best_nested is not None and not any(f.success for f in fits):
            # the fit from the nested estimate failed (on BDS00001's 0-20 s window K_I stopped on a
            # saddle of the flat K_I ridge, not_identifiable): this model's own starts as well, finished
            # from the lowest search on until one succeeds (a fit that succeeds is what they are for; on
            # BDS00012 the third, in the large-K_I family, cost 5 s of CPU for a fit that did not converge)
            own = [start] + [{**start, **extra} for extra in problem.starts]
            fits += self._fits(problem, lgm, yc, own, missing, until_success=True)
            points = points + own
            fell_back = True
        ranked = sorted(range(len(fits)), key=lambda i: (not fits[i].success, fits[i].nll))
        fit, start = fits[ranked[0]], points[ranked[0]]
        theta = {k: float(v) for k, v in fit.parameters.items()}
        t_post = time.perf_counter()
        measured = np.isfinite(y)

        def exact(theta, model=lgm):  # the exact filter's predictions and NLL at theta
            pred, sd = kalman.one_step_predictions(model, yc, theta, missing=True)
            terms = 0.5 * (np.log(2 * np.pi * sd**2) + ((yc - pred) / sd) ** 2)
            return pred, sd, float(np.sum(np.where(measured, terms, 0.0)))

        pred, sd, exact_nll = exact(theta)
        steady_gap, decrement = abs(exact_nll - float(fit.nll)), 0.0
        if fit.transient is not None:
            from ..inference.kalman.estimation import exact_newton_decrement

            decrement = exact_newton_decrement(lgm, yc, fit, compiled=self.compiled, missing=missing)[1]
        refit = not decrement <= STEADY_DECREMENT
        if refit:  # the exact likelihood's optimum is elsewhere: the exact filter from there, Newton first
            # (near the steady-state optimum: on BDS00001's first 30 s, PID-delay in the drifting family,
            # B 161 s, the exact filter's L-BFGS-B from there took 253 evaluations, 47 of the fit's 52 s)
            fit = self._fits(problem, lgm, yc, [theta], missing, transient=None, newton_first=True)[0]
            fits.append(fit)
            theta = {k: float(v) for k, v in fit.parameters.items()}
            pred, sd, exact_nll = exact(theta)
        compile_s = lgm.compile_s - compile_before
        loads = lgm.compile_log[log_before:]
        if not self.compiled or self.optimizer != "lbfgsb":
            compiled_note = ("interpreted (KalmanML(compiled=False))" if not self.compiled
                             else f"interpreted (the {self.optimizer} optimizer evaluates the likelihood in CasADi)")
        elif "failed" in loads:
            compiled_note = "interpreted (the filter's C code could not be compiled)"
        elif "built" in loads:
            compiled_note = f"compiled ({compile_s:.1f} s)"
        else:
            compiled_note = "compiled (cache hit)" if loads else "compiled (loaded earlier in this process)"
        others = _other_optima(fit, [fits[i] for i in ranked[1:]] + nested_fits, names)
        nested_info = None
        if nested is not None and best_nested is not None:
            # the likelihood-ratio test of the parameters the nested model lacks, on the exact NLLs
            from scipy.stats import chi2

            added = [k for k in names if k not in best_nested.parameters or k in best_nested.fixed]
            nested_nll = exact(best_nested.parameters, sub)[2]
            statistic = max(0.0, 2.0 * (nested_nll - exact_nll))
            nested_info = {"label": nested.label or nested.name, "nll": nested_nll, "added": added,
                           "parameters": dict(best_nested.parameters), "lr_statistic": statistic,
                           "p_value": float(chi2.sf(statistic, len(added))), "own_starts": fell_back}
        eig = np.linalg.eigvals(lgm.continuous(theta)["A"])
        # an eigenvalue at 0 is a pure integrator (an unused integral state), not an unstable loop
        stable = bool(np.all(eig.real < 1e-9 * max(1.0, float(np.abs(eig).max()))))
        pred = pred + offsets
        z = np.where(measured, (y - pred) / sd, np.nan)
        if not fit.success:
            status = "not_identifiable" if "not positive definite" in fit.message else "not_converged"
        elif problem.stable and not stable:
            status = "unstable"
        else:
            status = "Solve_Succeeded"
        warnings: list[dict[str, Any]] = []
        if problem.stable and not stable:
            warnings.append({"code": "unstable", "message": "the identified model is unstable (largest real part "
                             f"of its state matrix's eigenvalues {eig.real.max():.3g} 1/s)"})
        offset_names = [f"{c}_offset" for c in problem.outputs] if problem.center else []
        all_names = names + offset_names
        se = {k: (float(v) if np.isfinite(v) else None) for k, v in fit.standard_errors.items()}
        se.update({k: None for k in offset_names})
        import pandas as pd

        free = list(fit.covariance.index)
        cov = pd.DataFrame(np.nan, index=all_names, columns=all_names)
        cov.loc[free, free] = fit.covariance.to_numpy()
        robust = None
        with_se = [k for k in free if se.get(k) is not None]
        if self.errors == "robust" and with_se:
            from ..inference.kalman.robust import robust_covariance

            robust = robust_covariance(lgm, yc, theta, with_se, fit.covariance.loc[with_se, with_se].to_numpy(),
                                       bounds=fit.bounds, missing=True,
                                       hold_after=None if refit else fit.transient)
            cov.loc[with_se, with_se] = robust.covariance
            se.update(robust.standard_errors)
        index = pd.Index(trial.time, name="time")
        k_par = len(free)
        whiteness = {}
        for j, c in enumerate(problem.outputs):
            finite = z[:, j][np.isfinite(z[:, j])]
            if finite.size > 2 * LJUNG_BOX_LAGS:
                q, p = ljung_box(finite, LJUNG_BOX_LAGS)
                whiteness[c] = {"Q": q, "p": p, "lags": LJUNG_BOX_LAGS, "std": float(np.std(finite)),
                                "lag1": float(np.corrcoef(finite[1:], finite[:-1])[0, 1])}
            if finite.size > PREDICTABLE_FOLDS * (2 * PREDICTABLE_ORDER + 1):
                # what the innovations' own past predicts out of sample: each block of the record by an AR
                # fitted to the others (structure that changes along the record is not counted)
                ahead = innovation_predictability(finite, order=PREDICTABLE_ORDER, folds=PREDICTABLE_FOLDS)
                whiteness[c].update(
                    predictable_gain=ahead["gain"], predictable_share=ahead["share"],
                    predictable_order=PREDICTABLE_ORDER, predictable_folds=PREDICTABLE_FOLDS,
                    predictable_gain_max=PREDICTABLE_GAIN_MAX)
        params = {**theta, **dict(zip(offset_names, map(float, offsets)))}
        close = [o for o in others if o["nll"] - float(fit.nll) < AMBIGUOUS_NLL]
        if close:
            warnings.append({"code": "ambiguous_optimum", "parameters": sorted({k for o in close for k in o["apart"]}),
                             "message": f"{len(close)} other optimum(s) of the likelihood within {AMBIGUOUS_NLL:g} of "
                             "the best (" + "; ".join(f"NLL +{o['nll'] - float(fit.nll):.3g} at " + ", ".join(
                                 f"{k} {o['parameters'][k]:.4g}" for k in o["apart"]) for o in close)
                             + "): the record does not tell them apart; the standard errors describe one of them"})
        if problem.checks:
            warnings.extend(problem.checks(params))
        label = f" ({problem.label})" if problem.label else ""
        notes = list(problem.notes(params)) if problem.notes else []
        notes.append(f"NLL {exact_nll:.6g} · AIC {2 * exact_nll + 2 * k_par:.6g} ({k_par} free "
                     f"parameters) · model {'stable' if stable else 'UNSTABLE'} (largest real eigenvalue "
                     f"{eig.real.max():.3g} 1/s)")
        if fit.transient is not None:
            notes.append(f"likelihood: the filter's covariance updated over the first {fit.transient} samples and "
                         f"held after (steady state); at the estimate the exact NLL differs by {steady_gap:.2g}, "
                         f"and one Newton step on it would lower it by {decrement:.2g}")
        elif refit:
            notes.append(f"likelihood: exact filter (at the steady-state likelihood's estimate one Newton step on the "
                         f"exact one would have lowered it by {decrement:.2g})")
        if nested_info is not None:
            # on a boundary (a gain at 0) the statistic's null distribution is ½χ²₀ + ½χ²₁ for one parameter
            # (Self & Liang 1987, J Am Stat Assoc 82:605), so the χ² p-value given is conservative there
            notes.append(f"nested model {nested_info['label']} (without {', '.join(nested_info['added'])}) fitted "
                         f"first, NLL {nested_info['nll']:.6g}; "
                         + ("the fit from its estimate failed, so this model's own starts ran too; "
                            if nested_info["own_starts"] else "this fit started from its estimate; ")
                         + "likelihood-ratio "
                         f"statistic {nested_info['lr_statistic']:.3g} for {', '.join(nested_info['added'])} (χ² with "
                         f"{len(nested_info['added'])} degree(s) of freedom: p {nested_info['p_value']:.2g}, "
                         "conservative where the nested model is a limit such as a gain at 0)")
        for c, w in whiteness.items():
            notes.append(f"innovations of {c}: SD {w['std']:.3g} (1 if the model holds), lag-1 autocorrelation "
                         f"{w['lag1']:.3g}, Ljung–Box Q({w['lags']}) {w['Q']:.4g}, p {w['p']:.2g}"
                         + ((" (not white: the robust standard errors allow for it)" if robust is not None else
                             " (not white: the standard errors assume white innovations)") if w["p"] < 0.01 else ""))
            if "predictable_gain" in w:
                g = w["predictable_gain"]
                notes.append(f"innovations of {c}, predictable share: an AR({PREDICTABLE_ORDER}) of their own past, "
                             f"each of {PREDICTABLE_FOLDS} blocks of the record predicted by the AR fitted to the "
                             f"others, explains {max(w['predictable_share'], 0.0):.1%} of their variance (log score "
                             f"{g:+.4f} nats a sample; records of the model stay below {PREDICTABLE_GAIN_MAX:g})"
                             + (": structure the model could have used is left in them" if g > PREDICTABLE_GAIN_MAX
                                else ": nothing in them that the model could have used"))
        if robust is not None:
            ratios = robust.ratios
            wider = {k: r for k, r in ratios.items() if np.isfinite(r) and r > 1.0 + 1e-9}
            notes.append(f"standard errors: robust, the larger of the sandwich H⁻¹JH⁻¹ (Newey–West weights over "
                         f"{robust.bandwidth:.3g} samples; it holds when the noise model is wrong) and the model-based "
                         "one (inverse Fisher information, white Gaussian innovations assumed); "
                         + ("wider than the model-based ones for "
                            + ", ".join(f"{k} ×{r:.2g}" for k, r in wider.items())
                            if wider else "equal to the model-based ones (the sandwich is not larger)"))
        free_sim: dict = {"skipped": "KalmanML(free_draws=0)"}
        if self.free_draws > 0:
            free_sim = kalman.free_simulation_check(lgm, theta, y, dt, outputs=list(problem.outputs),
                                                   units=dict(problem.units), draws=int(self.free_draws))
        notes.extend(_free_simulation_notes(free_sim))
        outside = [f"{c} {stat.replace('_', ' ')}" for c, per in free_sim.get("outputs", {}).items()
                   for stat in ("rms", "mean_speed", "mean_power_frequency") if not per[stat]["inside"]]
        if outside:
            warnings.append({"code": "free_simulation_outside", "message": "the record's " + ", ".join(outside)
                             + (" lie" if len(outside) > 1 else " lies")
                             + f" outside the 95 % predictive interval of {free_sim['draws']} free simulations "
                             "of the fitted model: it does not reproduce the record's sway"})
        t_end = time.perf_counter()
        info = {"estimator": "Kalman maximum likelihood (prediction-error decomposition)",
                "free_simulation": free_sim,
                "model": lgm.name, "nll": exact_nll, "aic": 2 * exact_nll + 2 * k_par,
                "steady_state": {"transient_samples": fit.transient, "nll_gap": steady_gap,
                                 "exact_newton_decrement": decrement, "refit_exact": refit},
                "num_parameters": k_par, "stable": stable, "max_real_eigenvalue": float(eig.real.max()),
                "newton_decrement": fit.newton_decrement, "fisher_condition": fit.fisher_condition,
                "active_bounds": list(fit.active_bounds), "innovations_whiteness": whiteness,
                "innovations_std": float(np.nanstd(z)), "missing_samples": int(np.size(y) - measured.sum()),
                "sample_step_s": dt, "other_optima": others, "nested": nested_info,
                "standard_errors": "inverse observed Fisher information of the parameters "
                "off their bounds; assumes white Gaussian innovations" if robust is None else
                "robust: per parameter off its bounds the larger of the sandwich (quasi-maximum likelihood) and the "
                "model-based standard error; holds when the noise model is wrong (robust_standard_errors)",
                **({"robust_standard_errors": robust.to_info()} if robust is not None else {})}
        if problem.extra_info:
            info.update(problem.extra_info(params))
        estimate = Estimate(
            problem=problem.name, method=self.name, success=status == "Solve_Succeeded", status=status,
            message=f"Kalman maximum likelihood{label}: {fit.message}", iterations=fit.iterations,
            objective=exact_nll, parameters=params, standard_errors=se, covariance=cov,
            trajectories={trial.name: pd.DataFrame({c: pred[:, j] for j, c in enumerate(problem.outputs)},
                                                   index=index)},
            measurements={trial.name: pd.DataFrame({c: y[:, j] for j, c in enumerate(problem.outputs)},
                                                   index=index)},
            residuals={trial.name: pd.DataFrame({c: y[:, j] - pred[:, j] for j, c in enumerate(problem.outputs)},
                                                index=index)},
            timings={"build_s": t_build, "compile_s": compile_s, "solve_s": sum(f.time_s for f in fits + nested_fits),
                     "prediction_s": t_end - t_post, "total_s": t_end - t0},
            num_nodes=int(y.shape[0]), trials=[trial.name], versions=versions(),
            units={k: problem.units[k] for k in [*all_names, *problem.outputs] if k in problem.units},
            info=info, initial_parameters={k: float(start[k]) for k in names}, solver_status=fit.message,
            descriptions={k: problem.descriptions[k] for k in all_names if k in problem.descriptions},
            trajectory_label=f"one-step-ahead prediction (Kalman filter, {problem.label or lgm.name})", notes=notes,
            model_evaluation=compiled_note, starts={"count": len(points)})
        innovations = {trial.name: pd.DataFrame({c: z[:, j] for j, c in enumerate(problem.outputs)}, index=index)}
        physical = {k: (v, v) if isinstance(v, bool) else (bool(v[0]), bool(v[1])) for k, v in problem.physical.items()}
        # "on a bound" relative to each parameter's own size (the optimiser's scale), not to 1: a COP
        # noise of a few nm is far from a bound of 0.1 nm
        return finalize(estimate, bounds={**fit.bounds, **{k: (-np.inf, np.inf) for k in offset_names}},
                        physical=physical, scales=fit.scales, fit={c: 1.0 for c in problem.outputs},
                        verdict_residuals=innovations,
                        warnings=warnings, derived={k: "the record's mean (the sensor's origin)" for k in offset_names},
                        verdict_note="the Kalman filter's one-step-ahead innovations divided by their predicted SD",
                        no_simulation="a stochastic model: the trajectory shown is the Kalman filter's one-step-ahead "
                                      "prediction; the free-simulation check above compares the record's statistics "
                                      "with their distribution over free simulations")
