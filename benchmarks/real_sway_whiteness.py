"""Is issue 17's Ljung–Box criterion reachable on the shipped BDS records, and what meets its intent?

    OPENBLAS_NUM_THREADS=1 python benchmarks/real_sway_whiteness.py [--data FILE_OR_DIR ...]
        [--parts fit,calibration,blackbox,insample,diagnostics,decimated]
        [--controller PD] [--noise sway-lp] [--reps 1] [--draws 20] [--seed 2026] [--cache JSON] [--out JSON]

The protocol of issue 17's acceptance ("held-out innovations pass Ljung–Box in ≥ 80 % of
trials"): fit the first 30 s of a trial with ``co.solve(cip.stochastic_problem(trial.window(0, 30),
controller=C, body=cip.body(height, mass), noise=N), co.KalmanML())``, run the fitted model's
Kalman filter over the whole record, and apply Ljung–Box (:func:`colloc.signals.forecast.ljung_box`,
10 lags) to the standardised one-step innovations of 30–60 s; white if p > 0.05.  Parts:

* ``fit``: that fit on each shipped trial (cached in ``--cache``; the other parts use the fitted
  parameters) and its held-out Ljung–Box.
* ``calibration``: records simulated from each trial's fitted model (same length, 100 Hz, COP
  rounded to 1e-8 m as in the files, a 60 s burn-in from rest), judged by the same protocol:
  (a) filtered with the model that made them (``--draws`` records a trial; no fit), and
  (b) refitted on their first half like the real ones (``--reps`` records a trial).  A calibrated
  test passes 95 % of them.
* ``blackbox``: ARs of the order of least AIC and BIC (up to 60) and an ARMA of least AIC
  (statsmodels, orders up to (4, 4)) fitted on 0–30 s, judged on 30–60 s.
* ``insample``: the same model and an AR(AIC) fitted on 30–60 s itself, judged on 30–60 s.
* ``diagnostics``: where the held-out innovations' autocorrelation sits (per lag, per frequency
  band), Ljung–Box at 1–10 lags, on the squared innovations (McLeod–Li), the SD in 5 s blocks, the
  SD ratio of the held-out to the fitted half, and the innovations' predictable share
  (:func:`colloc.signals.forecast.innovation_predictability`) of the records and of the simulated ones.
* ``decimated``: the record decimated to 50 and 25 Hz (every 2nd / 4th sample), filtered with
  the 100 Hz fit's continuous-time model discretised at the new step, and an AR(AIC) refitted at that rate.

Writes JSON atomically (default benchmarks/results/real_sway_whiteness.json).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from _report import write_report
from real_sway_heldout import _info, _trials

import colloc as co
from colloc import kalman
from colloc.signals.forecast import fit_ar, innovation_predictability, ljung_box
from colloc.solving.kalman_ml import PREDICTABLE_FOLDS, PREDICTABLE_GAIN_MAX

#: Ljung–Box lags of issue 17's check (0.1 s at 100 Hz) and its level.
LB_LAGS = 10
LEVEL = 0.05
#: The split of the protocol (s) and the files' resolution (m: six decimals of a cm).
SPLIT = 30.0
RESOLUTION = 1e-8
#: Burn-in of the simulated records (s), started from rest.
BURN_IN = 60.0
#: Largest AR order searched by AIC/BIC, largest ARMA orders.
MAX_AR = 60
MAX_ARMA = 4
#: Order of the AR fitted to the innovations for their predictable share.
PREDICT_ORDER = 20
#: Frequency bands (Hz) of the innovations' spectrum.
BANDS = ((0.0, 2.0), (2.0, 5.0), (5.0, 10.0), (10.0, 15.0), (15.0, 20.0), (20.0, 50.0))


def _cip():
    from colloc_problems import cip

    return cip


def fit(trial: co.Trial, body: dict, controller: str, noise: str) -> dict:
    """The protocol's fit of ``trial`` (all of it: pass the window): parameters, status, CPU."""
    cip = _cip()
    c0 = time.process_time()
    try:
        result = co.solve(cip.stochastic_problem(trial, controller=controller, body=body, noise=noise),
                          co.KalmanML(free_draws=0))
    except co.SolveFailed as err:  # a failed fit still has its estimate: judged and counted as failed
        result = err.result
    return {"success": bool(result.success), "status": result.status,
            "parameters": {k: float(v) for k, v in result.parameters.items()},
            "standard_errors": dict(result.standard_errors), "cpu_s": time.process_time() - c0}


def model(body: dict, controller: str, noise: str, dt: float):
    cip = _cip()
    return cip.ml_model(controller, dt=dt, body=body, fit_disturbance=True, noise=noise)


def innovations(lgm, theta: dict, cop: np.ndarray) -> np.ndarray:
    """Standardised one-step innovations of the whole record (the filter from its first sample,
    the COP centred on the fit's offset), as ``colloc predict`` at one sample computes them."""
    th = {k: theta[k] for k in lgm.parameter_names}
    mean, sd = kalman.one_step_predictions(lgm, cop - theta.get("cop_offset", 0.0), th)
    return (cop - theta.get("cop_offset", 0.0) - mean[:, 0]) / sd[:, 0]


def simulate(lgm, theta: dict, num: int, dt: float, rng: np.random.Generator, rounded: bool = True) -> np.ndarray:
    """A record of ``num`` samples of the fitted model: the exact discrete process (Van Loan's
    covariance), started at rest and run ``BURN_IN`` s first, plus the offset, rounded to the
    files' ``RESOLUTION``.  The rounding is white noise of variance δ²/12 (2.9 nm for δ = 1e-8 m),
    which is what the fitted σ stands for (2.7–2.9 nm on the shipped trials), so only the rest of
    σ², if any, is added as Gaussian noise before rounding: both would count it twice (a first
    version did: innovations of SD 1.17 and lag-1 −0.20 under the true model)."""
    d = lgm.discretize({k: theta[k] for k in lgm.parameter_names})
    phi, C, R = d["Phi"], d["C"], d["R"]
    w, v = np.linalg.eigh(d["Q"])
    root = v * np.sqrt(np.clip(w, 0.0, None))
    burn = round(BURN_IN / dt)
    s = np.zeros(phi.shape[0])
    out = np.empty(num)
    z = rng.standard_normal((burn + num, phi.shape[0])) @ root.T
    for k in range(burn + num):
        if k >= burn:
            out[k - burn] = float(C[0] @ s)
        s = phi @ s + z[k]
    extra = max(float(R[0, 0]) - RESOLUTION**2 / 12.0, 0.0) if rounded else float(R[0, 0])
    y = out + np.sqrt(extra) * rng.standard_normal(num) + theta.get("cop_offset", 0.0)
    return np.round(y / RESOLUTION) * RESOLUTION if rounded else y


def lb_p(z, lags: int = LB_LAGS) -> float:
    return ljung_box(z, lags)[1]


def acf(z: np.ndarray, lags: int) -> np.ndarray:
    d = z - z.mean()
    c0 = float(d @ d)
    return np.array([float(d[k:] @ d[:-k]) / c0 for k in range(1, lags + 1)])


def band_shares(z: np.ndarray, dt: float) -> dict:
    """Share of the innovations' variance in each band (periodogram), against the band's share
    of the frequency axis (equal for white innovations)."""
    d = z - z.mean()
    p = np.abs(np.fft.rfft(d)) ** 2
    f = np.fft.rfftfreq(d.size, dt)
    p, f = p[1:], f[1:]
    out = {}
    for lo, hi in BANDS:
        m = (f > lo) & (f <= hi)
        share = float(p[m].sum() / p.sum())
        out[f"{lo:g}-{hi:g}"] = {"share": share, "white": float(m.mean()), "ratio": share / float(m.mean())}
    return out


def ar_by_criterion(y: np.ndarray, penalty: str, max_order: int = MAX_AR) -> int:
    """AR order (1…``max_order``) of least AIC or BIC, least squares on the same samples."""
    d = np.asarray(y, dtype=float) - float(np.mean(y))
    target = d[max_order:]
    n = target.size
    best = (np.inf, 1)
    for p in range(1, max_order + 1):
        X = np.stack([d[max_order - i - 1: d.size - i - 1] for i in range(p)], axis=1)
        coef, *_ = np.linalg.lstsq(X, target, rcond=None)
        r = target - X @ coef
        pen = 2 * p if penalty == "aic" else p * np.log(n)
        best = min(best, (n * np.log(float(r @ r) / n) + pen, p))
    return best[1]


def ar_heldout_z(y: np.ndarray, first: np.ndarray, order: int) -> np.ndarray:
    model_ = fit_ar(y[first], order)
    m, s = model_.forecast(y, 1)
    held = ~first
    return (y[held] - m[held]) / s[held]


def halves_test(y: np.ndarray, first: np.ndarray, order: int) -> dict:
    """Do the two halves follow the same AR(``order``)?  Likelihood ratio of one AR (coefficients
    and innovation variance) for both halves against one per half, least squares on each half's
    own lagged values: χ² with ``order + 1`` degrees of freedom under a stationary AR."""
    def rss(parts):
        X = np.concatenate([np.stack([p[order - i - 1: p.size - i - 1] for i in range(order)], axis=1)
                            for p in parts])
        t = np.concatenate([p[order:] for p in parts])
        coef, *_ = np.linalg.lstsq(X, t, rcond=None)
        r = t - X @ coef
        return float(r @ r), t.size

    halves = [y[first] - y[first].mean(), y[~first] - y[~first].mean()]
    pooled, n = rss(halves)
    each = [rss([h]) for h in halves]
    lr = n * np.log(pooled / n) - sum(m * np.log(r / m) for r, m in each)
    from scipy import stats

    return {"order": order, "lr": float(lr), "p": float(stats.chi2.sf(lr, order + 1))}


def ar_predictability(y: np.ndarray, first: np.ndarray, order: int) -> float:
    """The held-out predictable share of an AR(``order``) fitted on the first part (the gain of
    :func:`innovation_predictability` on its one-step errors, AR fitted to the first part's)."""
    model_ = fit_ar(y[first], order)
    m, s = model_.forecast(y, 1)
    z = (y - m) / s
    ok = np.isfinite(z)
    return innovation_predictability(z[~first & ok], fit=z[first & ok], order=PREDICT_ORDER)["gain"]


def arma_heldout(y: np.ndarray, first: np.ndarray) -> dict:
    """ARMA(p, q) of least AIC (statsmodels, p, q ≤ MAX_ARMA) on the first part, its one-step
    errors on the rest (the fitted parameters applied to the whole record)."""
    import warnings

    from statsmodels.tsa.arima.model import ARIMA

    scale = float(np.std(y[first]))
    x = (y - y[first].mean()) / scale
    best, failed = None, []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for p in range(1, MAX_ARMA + 1):
            for q in range(MAX_ARMA + 1):
                try:
                    r = ARIMA(x[first], order=(p, 0, q), trend="n").fit()
                except Exception as err:  # noqa: BLE001 - a failed order is skipped, and listed
                    failed.append([p, q, str(err)[:80]])
                    continue
                if best is None or r.aic < best[0]:
                    best = (r.aic, p, q, r.params)
        assert best is not None
        _, p, q, params = best
        whole = ARIMA(x, order=(p, 0, q), trend="n").filter(params)
    resid = whole.resid[~first]
    # standardised by the fitted innovation variance (the ARMA's own predictive SD after the start)
    z = resid / np.sqrt(params[-1])
    return {"order": [int(p), int(q)], "lb_p": lb_p(z), "sd": float(np.std(z)), "failed_orders": failed}


def report_gain(z_fit: np.ndarray) -> float:
    """The report's check (``KalmanML``: ``predictable_gain``) on the fitted window's innovations:
    an AR(``PREDICT_ORDER``) cross-validated over ``PREDICTABLE_FOLDS`` blocks."""
    return innovation_predictability(z_fit, order=PREDICT_ORDER, folds=PREDICTABLE_FOLDS)["gain"]


def diagnostics(z_fit: np.ndarray, z_held: np.ndarray, dt: float) -> dict:
    sq = z_held**2
    blocks = round(5.0 / dt)
    sds = [float(np.std(z_held[i:i + blocks])) for i in range(0, z_held.size - blocks + 1, blocks)]
    rho = acf(z_held, 20)
    return {
        "acf": rho.tolist(),
        "lb_p_by_lags": [lb_p(z_held, k) for k in range(1, LB_LAGS + 1)],
        "lb_p_20": lb_p(z_held, 20),
        "squared_lb_p": lb_p(sq),
        "block_sd": sds,
        "block_sd_ratio": max(sds) / min(sds),
        "sd_fit": float(np.std(z_fit)), "sd_held": float(np.std(z_held)),
        "sd_ratio": float(np.std(z_held) / np.std(z_fit)),
        "lb_p_fit": lb_p(z_fit),
        "bands": band_shares(z_held, dt),
        "bands_fit": band_shares(z_fit, dt),
        "sum_rho2_10": float(np.sum(rho[:LB_LAGS] ** 2)),
        "predictability": innovation_predictability(z_held, fit=z_fit, order=PREDICT_ORDER),
        "predictability_in_sample": innovation_predictability(z_held, order=PREDICT_ORDER),
        "report_gain": report_gain(z_fit),
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", nargs="+", default=[str(ROOT / "data" / "bds")])
    ap.add_argument("--info", default=str(ROOT / "data" / "bds" / "BDSinfoCOP_subset.txt"))
    ap.add_argument("--parts", default="fit,calibration,blackbox,insample,diagnostics,decimated")
    ap.add_argument("--controller", default="PD")
    ap.add_argument("--noise", default="sway-lp")
    ap.add_argument("--reps", type=int, default=1, help="simulated records a trial refitted (calibration b)")
    ap.add_argument("--draws", type=int, default=20, help="simulated records a trial filtered by their model")
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--cache", default=str(ROOT / "benchmarks" / "results" / "real_sway_whiteness_fits.json"))
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "real_sway_whiteness.json"))
    args = ap.parse_args(argv)
    parts = set(args.parts.split(","))
    cip = _cip()
    info = _info(Path(args.info))
    cache_path = Path(args.cache)
    cache = json.loads(cache_path.read_text()) if cache_path.exists() else {}
    key = f"{args.controller}/{args.noise}"
    cache.setdefault(key, {})
    out: dict = {"controller": args.controller, "noise": args.noise, "lags": LB_LAGS, "split_s": SPLIT,
                 "trials": {}}
    rng = np.random.default_rng(args.seed)

    def save_cache():
        cache_path.parent.mkdir(parents=True, exist_ok=True)
        co.write_atomic(cache_path, json.dumps(cache, indent=1) + "\n")

    for path in _trials(args.data):
        name = path.name.split(".")[0]
        row = info[name]
        body = cip.body(float(row["Height"]) / 100.0, float(row["Weight"]))
        trial = cip.load_trial(str(path), columns={"cop": "COPx"})
        cop = np.asarray(trial["cop"], dtype=float)
        dt = float(np.median(np.diff(trial.time)))
        first = trial.time < SPLIT
        res: dict = {"vision": row.get("Vision"), "surface": row.get("Surface")}
        if name not in cache[key]:
            cache[key][name] = fit(trial.window(0.0, SPLIT), body, args.controller, args.noise)
            save_cache()
        ref = cache[key][name]
        lgm = model(body, args.controller, args.noise, dt)
        z = innovations(lgm, ref["parameters"], cop)
        res.update(success=ref["success"], status=ref["status"], cpu_s=ref["cpu_s"], parameters=ref["parameters"],
                   lb_p=lb_p(z[~first]), lag1=float(acf(z[~first], 1)[0]), sd=float(np.std(z[~first])))
        line = f"{name} {ref['status'][:16]:16s} LB p {res['lb_p']:.2g} sd {res['sd']:.3f} lag1 {res['lag1']:+.3f}"
        if "diagnostics" in parts:
            res["diagnostics"] = diagnostics(z[first], z[~first], dt)
            g = res["diagnostics"]["predictability"]
            line += f" | gain {g['gain']:.4f} nat, LB² p {res['diagnostics']['squared_lb_p']:.2g}"
        if "calibration" in parts:
            num = cop.size
            true_p, true_gain, true_report = [], [], []
            for _ in range(args.draws):
                y = simulate(lgm, ref["parameters"], num, dt, rng)
                zs = innovations(lgm, ref["parameters"], y)
                true_p.append(lb_p(zs[~first]))
                true_gain.append(innovation_predictability(zs[~first], fit=zs[first], order=PREDICT_ORDER)["gain"])
                true_report.append(report_gain(zs[first]))
            unrounded = []
            for _ in range(args.draws // 2):
                y = simulate(lgm, ref["parameters"], num, dt, rng, rounded=False)
                zs = innovations(lgm, ref["parameters"], y)
                unrounded.append(lb_p(zs[~first]))
            refit = []
            for _ in range(args.reps):
                y = simulate(lgm, ref["parameters"], num, dt, rng)
                sim = co.Trial(trial.time, {"cop": y}, name=f"{name}-sim")
                f = fit(sim.window(0.0, SPLIT), body, args.controller, args.noise)
                zs = innovations(lgm, f["parameters"], y)
                refit.append({"success": f["success"], "status": f["status"], "cpu_s": f["cpu_s"],
                              "parameters": f["parameters"], "acf": acf(zs[~first], LB_LAGS).tolist(),
                              "lb_p_fit": lb_p(zs[first]),
                              "lb_p": lb_p(zs[~first]), "sd": float(np.std(zs[~first])),
                              "gain": innovation_predictability(zs[~first], fit=zs[first], order=PREDICT_ORDER)["gain"],
                              "report_gain": report_gain(zs[first]),
                              "squared_lb_p": lb_p(zs[~first] ** 2)})
            res["calibration"] = {"true_model_lb_p": true_p, "true_model_gain": true_gain, "refit": refit,
                                  "true_model_report_gain": true_report,
                                  "true_model_unrounded_lb_p": unrounded}
            line += (f" | sim: true {np.mean(np.array(true_p) > LEVEL):.2f} white, refit "
                     f"{sum(r['lb_p'] > LEVEL for r in refit)}/{len(refit)}")
        if "blackbox" in parts:
            bb = {}
            for crit in ("aic", "bic"):
                p = ar_by_criterion(cop[first], crit)
                zb = ar_heldout_z(cop, first, p)
                bb[f"ar_{crit}"] = {"order": p, "lb_p": lb_p(zb), "sd": float(np.std(zb)),
                                    "gain": ar_predictability(cop, first, p)}
            bb["arma_aic"] = arma_heldout(cop, first)
            res["blackbox"] = bb
            res["halves"] = halves_test(cop, first, bb["ar_aic"]["order"])
            line += " | " + " ".join(f"{k} {v['order']} p {v['lb_p']:.2g}" for k, v in bb.items())
        if "insample" in parts:
            held = ~first
            cache.setdefault(key + "/second-half", {})
            if name not in cache[key + "/second-half"]:
                cache[key + "/second-half"][name] = fit(trial.window(SPLIT, None), body, args.controller, args.noise)
                save_cache()
            f2 = cache[key + "/second-half"][name]
            second = co.Trial(trial.time[held], {"cop": cop[held]}, name=name)
            z2 = innovations(lgm, f2["parameters"], np.asarray(second["cop"], dtype=float))
            p_ar = ar_by_criterion(cop[held], "aic")
            ar2 = fit_ar(cop[held], p_ar)
            m2, s2 = ar2.forecast(cop[held], 1)
            za = ((cop[held] - m2) / s2)[p_ar:]
            res["insample"] = {"model": {"success": f2["success"], "status": f2["status"], "lb_p": lb_p(z2),
                                         "sd": float(np.std(z2)), "lag1": float(acf(z2, 1)[0]),
                                         "parameters": f2["parameters"]},
                               "ar_aic": {"order": p_ar, "lb_p": lb_p(za)}}
            line += f" | in-sample model p {lb_p(z2):.2g} ({f2['status'][:10]}), AR({p_ar}) p {lb_p(za):.2g}"
        if "decimated" in parts:
            dec = {}
            for step in (2, 4):
                idx = np.arange(0, cop.size, step)
                yd, td = cop[idx], trial.time[idx]
                fd = td < SPLIT
                lgd = model(body, args.controller, args.noise, dt * step)
                zd = innovations(lgd, ref["parameters"], yd)
                pd_ = ar_by_criterion(yd[fd], "aic", MAX_AR // step)
                za = ar_heldout_z(yd, fd, pd_)
                dec[f"{100 // step} Hz"] = {"model_lb_p": lb_p(zd[~fd]), "model_sd": float(np.std(zd[~fd])),
                                            "model_lag1": float(acf(zd[~fd], 1)[0]),
                                            "model_lb_p_by_lags": [lb_p(zd[~fd], k) for k in range(1, LB_LAGS + 1)],
                                            "ar_order": pd_, "ar_lb_p": lb_p(za)}
            res["decimated"] = dec
            line += " | " + " ".join(f"{k}: model p {v['model_lb_p']:.2g} AR p {v['ar_lb_p']:.2g}"
                                     for k, v in dec.items())
        out["trials"][name] = res
        print(line, flush=True)
    out["summary"] = summarise(out["trials"])
    print(json.dumps(out["summary"], indent=1))
    write_report(args.out, out)
    return 0


def summarise(trials: dict) -> dict:
    rs = list(trials.values())
    white = [r["lb_p"] > LEVEL for r in rs]
    s: dict = {"trials": len(rs), "success": sum(r["success"] for r in rs), "white": int(sum(white)),
               "median_sd": float(np.median([r["sd"] for r in rs])),
               "median_lag1": float(np.median([r["lag1"] for r in rs]))}
    if all("calibration" in r for r in rs):
        tp = np.concatenate([r["calibration"]["true_model_lb_p"] for r in rs])
        rp = [x["lb_p"] for r in rs for x in r["calibration"]["refit"]]
        tg = np.concatenate([r["calibration"]["true_model_gain"] for r in rs])
        rg = [x["gain"] for r in rs for x in r["calibration"]["refit"]]
        up = np.concatenate([r["calibration"]["true_model_unrounded_lb_p"] for r in rs])
        s["calibration"] = {"true_model_white": float(np.mean(tp > LEVEL)), "true_model_records": int(tp.size),
                            "true_model_unrounded_white": float(np.mean(up > LEVEL)) if up.size else None,
                            "refit_white": float(np.mean(np.array(rp) > LEVEL)), "refit_records": len(rp),
                            "refit_success": sum(x["success"] for r in rs for x in r["calibration"]["refit"]),
                            "refit_white_of_successes": float(np.mean([x["lb_p"] > LEVEL for r in rs
                                                                       for x in r["calibration"]["refit"]
                                                                       if x["success"]] or [np.nan])),
                            "refit_fit_half_white": float(np.mean([x["lb_p_fit"] > LEVEL for r in rs
                                                                   for x in r["calibration"]["refit"]] or [np.nan])),
                            "true_model_white_by_trial": {n: float(np.mean(np.array(r["calibration"]["true_model_lb_p"])
                                                                           > LEVEL)) for n, r in trials.items()},
                            "true_model_gain_q95": float(np.quantile(tg, 0.95)),
                            "true_model_gain_max": float(tg.max()),
                            "refit_gain_q95": float(np.quantile(rg, 0.95)) if rg else None,
                            "refit_gain_max": float(np.max(rg)) if rg else None,
                            "true_model_report_gain_max": float(max(max(r["calibration"]["true_model_report_gain"])
                                                                    for r in rs)),
                            "refit_report_gain_max": float(max([x["report_gain"] for r in rs
                                                                for x in r["calibration"]["refit"]] or [np.nan]))}
    if all("blackbox" in r for r in rs):
        s["blackbox_white"] = {k: int(sum(r["blackbox"][k]["lb_p"] > LEVEL for r in rs))
                               for k in rs[0]["blackbox"]}
        s["blackbox_orders"] = {k: [r["blackbox"][k]["order"] for r in rs] for k in rs[0]["blackbox"]}
        s["blackbox_gain"] = {k: [r["blackbox"][k]["gain"] for r in rs] for k in ("ar_aic", "ar_bic")}
        s["blackbox_gain_above_report_max"] = {k: int(sum(r["blackbox"][k]["gain"] > PREDICTABLE_GAIN_MAX for r in rs))
                                               for k in ("ar_aic", "ar_bic")}
        s["halves_same_ar"] = int(sum(r["halves"]["p"] > LEVEL for r in rs))
        s["halves_lr"] = [r["halves"]["lr"] for r in rs]
    if all("insample" in r for r in rs):
        s["insample_white"] = {"model": int(sum(r["insample"]["model"]["lb_p"] > LEVEL for r in rs)),
                               "ar_aic": int(sum(r["insample"]["ar_aic"]["lb_p"] > LEVEL for r in rs))}
    if all("diagnostics" in r for r in rs):
        d = [r["diagnostics"] for r in rs]
        s["diagnostics"] = {
            "median_acf": np.median([x["acf"] for x in d], axis=0).round(4).tolist(),
            "white_by_lags": [int(sum(x["lb_p_by_lags"][k] > LEVEL for x in d)) for k in range(LB_LAGS)],
            "squared_white": int(sum(x["squared_lb_p"] > LEVEL for x in d)),
            "median_block_sd_ratio": float(np.median([x["block_sd_ratio"] for x in d])),
            "sd_ratio_range": [float(min(x["sd_ratio"] for x in d)), float(max(x["sd_ratio"] for x in d))],
            "fit_half_white": int(sum(x["lb_p_fit"] > LEVEL for x in d)),
            "median_band_share": {b: float(np.median([x["bands"][b]["share"] for x in d])) for b in d[0]["bands"]},
            "band_ratio_range": {b: [float(min(x["bands"][b]["ratio"] for x in d)),
                                     float(max(x["bands"][b]["ratio"] for x in d))] for b in d[0]["bands"]},
            "median_band_ratio": {b: float(np.median([x["bands"][b]["ratio"] for x in d])) for b in d[0]["bands"]},
            "median_band_ratio_fit": {b: float(np.median([x["bands_fit"][b]["ratio"] for x in d]))
                                      for b in d[0]["bands_fit"]},
            "band_ratio_fit_range": {b: [float(min(x["bands_fit"][b]["ratio"] for x in d)),
                                         float(max(x["bands_fit"][b]["ratio"] for x in d))] for b in d[0]["bands_fit"]},
            "gain": [x["predictability"]["gain"] for x in d],
            "gain_in_sample": [x["predictability_in_sample"]["gain"] for x in d],
            "report_gain": [x["report_gain"] for x in d],
            "gain_above_report_max": int(sum(x["predictability"]["gain"] > PREDICTABLE_GAIN_MAX for x in d)),
            "report_gain_above_report_max": int(sum(x["report_gain"] > PREDICTABLE_GAIN_MAX for x in d)),
        }
    if all("decimated" in r for r in rs):
        s["decimated_white"] = {k: {"model": int(sum(r["decimated"][k]["model_lb_p"] > LEVEL for r in rs)),
                                    "ar": int(sum(r["decimated"][k]["ar_lb_p"] > LEVEL for r in rs))}
                                for k in rs[0]["decimated"]}
    return s


if __name__ == "__main__":
    sys.exit(main())
