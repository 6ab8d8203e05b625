"""Held-out validation of the CIP on real quiet standing (Santos & Duarte 2016, BDS).

    python benchmarks/real_cip_study.py [--data DIR] [--info BDSinfoCOP.txt] [--dataset bds|pds]
        [--estimator ML|MAP-OM] [--models PID,PD-delay,PID-delay] [--quick] [--trials N] [--half S]
        [--out JSON]

For every trial ``BDS*.txt.gz`` in ``--data`` (default: the twelve shipped trials in data/bds):
the subject's body from height and mass (``cip.body``, Winter 2009), the antero-posterior COP
(``COPx``, cm -> m), a fit on the first half, prediction of the held-out second half.
``--dataset pds``: the files ``PDS*grf.txt.gz`` of dos Santos et al. (2017, PeerJ 5:e3626; another
lab, one plate per foot), the net COP ``COPNET_X`` (m, time column ``Time``), heights in m in
``PDSinfo``-style tables (``--info``, default ``PDSinfoCOP.txt`` beside ``--data``).

Gains are bounded by ``cip.WIDE_RANGES_PER_MGH`` (multiples of the subject's m g h), and the
disturbance filter's amplitude A and time constant B are fitted, so that the predicted sway
intensity can follow the subject's.

``--estimator ML`` (default): exact Kalman maximum likelihood (``cip.ml_estimate``) of each
model in ``--models`` (``cip.CONTROLLERS``: PID, PD with feedback delay, PID with delay; Padé
(2, 2) delay), with the COP measurement noise sigma as a parameter; the COP is centred by the
first half's mean.  Per model: NLL, AIC = 2 NLL + 2 k on the fit half, and the held-out NLL of
the second half given the first (NLL of the whole record minus that of the first half, the
exact one-step-ahead predictive likelihood).  The model with the lowest held-out NLL is the
trial's choice (the AIC's choice is reported too).
``--estimator MAP-OM``: the collocation MAP-OM fit of the PID model (A, B fitted, COP noise
fixed at ``cip.COP_NOISE``).

Prediction: the fitted model is simulated (10 realisations, seeds 0..9, 30 s after a 10 s
settling period, with its COP measurement noise); the COP RMS about the mean and the mean COP
speed (4th-order 10 Hz zero-lag Butterworth low-pass, as the BDS check) are compared with the
held-out half.  A trial counts as predicted when both are within 25 % of the observed.  A fit
that fails is recorded with its status, never raised.  Also: stability of the identified closed
loop (eigenvalues of the continuous system) and K_P > m g h.  The summary has, per condition
(vision x surface), the median parameters and the coefficient of variation of each parameter
over the repeats of a subject.

``--quick``: the first two trials, 20 s halves.  Writes JSON atomically (default
benchmarks/results/real_cip_study.json).
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import time
from pathlib import Path

import numpy as np
from scipy.signal import butter, filtfilt

import colloc as co
from colloc import versions, write_atomic
from colloc_problems import cip

ROOT = Path(__file__).resolve().parents[1]
#: Realisations of a fitted model per prediction (seeds 0 … RUNS−1).
RUNS = 40


def info_table(path: Path) -> dict:
    with open(path, newline="") as handle:
        return {r["Trial"]: r for r in csv.DictReader(handle, delimiter="\t")}


def stats(cop: np.ndarray, rate: float) -> tuple[float, float]:
    """(RMS about the mean, mean speed) of a 1-D COP in m, after a 10 Hz low-pass."""
    b, a = butter(2, 10.0 / (rate / 2))
    x = filtfilt(b, a, cop)
    return float(np.std(x)), float(np.mean(np.abs(np.diff(x))) * rate)


def simulated_stats(lgm, theta: dict, duration: float, rate: float, runs: int = RUNS) -> tuple[float, float, float]:
    """Mean over ``runs`` realisations of (RMS, mean speed) of the model's COP after 10 s, and
    the fraction of the realisations whose own RMS and speed are both within 25 % of those
    means: the hit rate a perfect model of this trial would have (the ceiling of the test)."""
    from colloc.inference.kalman.likelihood import simulate

    settle, n = int(round(10 * rate)), int(round(duration * rate))
    rms, speed = [], []
    for seed in range(runs):
        y = simulate(lgm, theta, settle + n, rng=seed)[settle:, 0]
        r, s = stats(y, rate)
        rms.append(r)
        speed.append(s)
    mean = (float(np.mean(rms)), float(np.mean(speed)))
    hits = float(np.mean([_within((r, s), mean) for r, s in zip(rms, speed)]))
    return mean[0], mean[1], hits


def predicted(params: dict, body: dict, duration: float, rate: float, runs: int = 10) -> tuple[float, float]:
    """The MAP-OM PID model's (RMS, speed) with its fitted disturbance filter and COP noise."""
    rms, speed = [], []
    settle = int(10 * rate)
    gains = {k: params[k] for k in cip.GAINS}
    filt = {k: params[k] for k in ("A", "B") if k in params}
    for seed in range(runs):
        t = cip.simulate_trial(gains, duration=duration + 10.0, rate=rate, seed=seed, cop_noise=cip.COP_NOISE,
                               body=body, filt=filt)
        r, s = stats(t["cop"][settle:], rate)
        rms.append(r)
        speed.append(s)
    return float(np.mean(rms)), float(np.mean(speed))


def stable(gains: dict, body: dict) -> bool:
    """Roots of I s³ + K_D s² + (K_P − m g h) s + K_I (the PID closed loop) in the left half-plane."""
    roots = np.roots([body["I"], gains["KD"], gains["KP"] - body["m"] * body["g"] * body["h"], gains["KI"]])
    return bool(np.all(roots.real < 0))


def _within(pred, obs) -> bool:
    return all(abs(p / o - 1) <= 0.25 for p, o in zip(pred, obs))


def fit_ml(fit_part: co.Trial, full: np.ndarray, body: dict, controller: str, half: float, rate: float,
           obs: tuple) -> dict:
    """One model by Kalman ML on ``fit_part``: parameters, criteria, held-out NLL, prediction."""
    from colloc.inference.kalman.likelihood import negative_log_likelihood

    start = time.perf_counter()
    try:
        r = cip.ml_estimate(fit_part, cop_noise=None, body=body, bounds="wide", controller=controller,
                            fit_disturbance=True, center=True, hessian="exact")
    except co.CollocError as exc:
        return {"status": f"error: {exc}", "seconds": time.perf_counter() - start, "success": False}
    out = {"seconds": time.perf_counter() - start, "success": bool(r.success), "status": r.message,
           "parameters": {k: float(v) for k, v in r.parameters.items()},
           "standard_errors": {k: float(v) for k, v in r.standard_errors.items()},
           "active_bounds": list(r.active_bounds), "nll": float(r.nll)}
    lgm = cip.ml_model(controller, dt=1.0 / rate, body=body, fit_disturbance=True)
    k = len(lgm.parameter_names)
    out["aic"] = 2 * float(r.nll) + 2 * k
    y = full - float(np.mean(fit_part["cop"]))
    n = fit_part.num_samples
    theta = r.parameters
    out["heldout_nll"] = float(negative_log_likelihood(lgm, y[:, None], theta) -
                               negative_log_likelihood(lgm, y[:n, None], theta))
    eig = np.linalg.eigvals(lgm.continuous(theta)["A"])
    out["stable"] = bool(np.all(eig.real < 0))
    out["KP_over_mgh"] = theta["KP"] / (body["m"] * body["g"] * body["h"])
    pred = simulated_stats(lgm, theta, half, rate)
    out["predicted"] = {"rms_m": pred[0], "speed_m_s": pred[1]}
    out["within_25"] = bool(r.success and _within(pred[:2], obs))
    out["perfect_model_hit_rate"] = pred[2]
    clean = simulated_stats(lgm, {**theta, "sigma": 0.0}, half, rate, runs=10)  # the model's COP without its noise
    out["predicted_noise_free"] = {"rms_m": clean[0], "speed_m_s": clean[1]}
    out["within_25_noise_free"] = bool(r.success and _within(clean[:2], obs))
    return out


#: How each data set names its files, COP column and body measures (BDS: cm and "Weight"; PDS: m and "Mass").
DATASETS = {
    "bds": {"glob": "BDS*.txt.gz", "info": "BDSinfoCOP*.txt", "columns": {"cop": "COPx"},
            "height_m": lambda row: float(row["Height"]) / 100, "mass": "Weight"},
    "pds": {"glob": "PDS*grf.txt.gz", "info": "PDSinfoCOP*.txt", "columns": {"cop": "COPNET_X", "time": "Time"},
            "height_m": lambda row: float(row["Height"]), "mass": "Mass"},
}


def trial_key(path: Path) -> str:
    """The info table's key of a trial file: BDS00001.txt.gz -> BDS00001, PDS13OR1grf.txt.gz -> PDS13OR1."""
    stem = path.name.split(".")[0]
    return stem[:-3] if stem.endswith("grf") else stem


def one_trial(path: Path, row: dict, half: float, estimator: str = "ML", models=("PID",), dataset: str = "bds") -> dict:
    spec = DATASETS[dataset]
    body = cip.body(height=spec["height_m"](row), mass=float(row[spec["mass"]]))
    trial = cip.load_trial(path, columns=spec["columns"])
    rate = 1.0 / float(np.median(np.diff(trial.time)))
    n = int(round(half * rate))
    fit_part = co.Trial(trial.time[:n], {"cop": trial["cop"][:n]}, name=path.name)
    held = trial["cop"][n:2 * n]
    obs = stats(held, rate)
    first = stats(trial["cop"][:n], rate)  # the naive predictor: the fit half's own statistics
    out = {"trial": path.name, "subject": row.get("Subject"), "vision": row.get("Vision"),
           "surface": row.get("Surface"), "body": body, "estimator": estimator,
           "observed": {"rms_m": obs[0], "speed_m_s": obs[1]},
           "first_half": {"rms_m": first[0], "speed_m_s": first[1]},
           "first_half_within_25": _within(first, obs),
           "published": {k: float(row[k]) for k in ("COParea", "COPvelo", "COPmfreq") if row.get(k)}}
    if estimator == "ML":
        fits = {c: fit_ml(fit_part, trial["cop"][:2 * n], body, c, half, rate, obs) for c in models}
        out["models"] = fits
        ok = {c: f for c, f in fits.items() if f.get("success")}
        out["seconds"] = sum(f["seconds"] for f in fits.values())
        if not ok:
            out.update(status="; ".join(f"{c}: {f['status']}" for c, f in fits.items()), success=False)
            return out
        chosen = min(ok, key=lambda c: ok[c]["heldout_nll"])
        out["chosen_by_heldout_nll"] = chosen
        out["chosen_by_aic"] = min(ok, key=lambda c: ok[c]["aic"])
        best = ok[chosen]
        out.update(status=best["status"], success=True, parameters=best["parameters"],
                   standard_errors=best["standard_errors"], stable=best["stable"],
                   KP_over_mgh=best["KP_over_mgh"], predicted=best["predicted"], within_25=best["within_25"],
                   within_25_noise_free=best["within_25_noise_free"],
                   perfect_model_hit_rate=best["perfect_model_hit_rate"])
        return out
    start = time.perf_counter()
    try:
        result = co.solve(cip.problem([fit_part], body=body, bounds="wide", fit_disturbance=True), throw=False)
    except co.CollocError as exc:
        out.update(status=f"error: {exc}", seconds=time.perf_counter() - start, success=False)
        return out
    out["seconds"] = time.perf_counter() - start
    out["status"] = result.status
    out["success"] = bool(result.success)
    params = {k: float(v) for k, v in result.parameters.items()}
    out["parameters"] = params
    out["standard_errors"] = {k: float(v) for k, v in result.standard_errors.items()}
    out["stable"] = stable(params, body)
    out["KP_over_mgh"] = params["KP"] / (body["m"] * body["g"] * body["h"])
    pred = predicted(params, body, half, rate)
    out["predicted"] = {"rms_m": pred[0], "speed_m_s": pred[1]}
    out["within_25"] = bool(result.success and _within(pred, obs))
    return out


def sampling_ceiling(rows: list, draws: int = 200_000, seed: int = 0) -> dict | None:
    """The hit rate of a predictor that knows each trial's exact expected RMS and speed.

    If the two halves of a trial are two windows of one stationary process, the log of
    (second half ÷ first half) of each statistic is the difference of two independent window
    fluctuations, so half its covariance over the trials is the covariance Σ of one window's
    log fluctuation about its expectation.  A prediction equal to the expectation then hits
    (both within 25 %) with the probability that a N(0, Σ) draw e has −e in [log 0.75,
    log 1.25] for both statistics.  No prediction from the first half can do better on
    average; non-stationarity within a trial only lowers it.
    """
    pairs = [(r["first_half"], r["observed"]) for r in rows if "first_half" in r]
    if len(pairs) < 3:
        return None
    logs = np.array([[np.log(o[k] / f[k]) for k in ("rms_m", "speed_m_s")] for f, o in pairs])
    rng = np.random.default_rng(seed)

    def hits(sample, n):
        e = rng.multivariate_normal(np.zeros(2), np.cov(sample, rowvar=False) / 2, size=n)
        return (-e >= np.log(0.75)) & (-e <= np.log(1.25))

    cov = np.cov(logs, rowvar=False) / 2
    hit = hits(logs, draws)
    # its uncertainty from the finite set of trials: the trials resampled (bootstrap, 5-95 %)
    boot = [hits(logs[rng.integers(0, len(logs), len(logs))], draws // 100).all(axis=1).mean() for _ in range(400)]
    return {"window_log_sd": {"rms_m": float(np.sqrt(cov[0, 0])), "speed_m_s": float(np.sqrt(cov[1, 1]))},
            "correlation": float(cov[0, 1] / np.sqrt(cov[0, 0] * cov[1, 1])),
            "hit_rate_rms": float(hit[:, 0].mean()), "hit_rate_speed": float(hit[:, 1].mean()),
            "hit_rate_both": float(hit.all(axis=1).mean()),
            "hit_rate_both_5_95": [float(np.percentile(boot, 5)), float(np.percentile(boot, 95))],
            "trials": len(pairs)}


def summarise(rows: list, half: float, seconds: float) -> dict:
    ok = [r for r in rows if r.get("within_25")]
    ratios = {k: [r["predicted"][k] / r["observed"][k] for r in rows if "predicted" in r]
              for k in ("rms_m", "speed_m_s")}
    s = {"trials": len(rows), "within_25_percent": len(ok),
         "fraction_within_25": len(ok) / len(rows) if rows else 0.0,
         "within_25_noise_free": sum(bool(r.get("within_25_noise_free")) for r in rows),
         "converged": sum(bool(r.get("success")) for r in rows),
         "stable": sum(bool(r.get("stable")) for r in rows),
         "KP_above_mgh": sum(r.get("KP_over_mgh", 0) > 1 for r in rows),
         "median_ratio_rms": float(np.median(ratios["rms_m"])) if ratios["rms_m"] else None,
         "median_ratio_speed": float(np.median(ratios["speed_m_s"])) if ratios["speed_m_s"] else None,
         "rms_within_25": sum(abs(x - 1) <= 0.25 for x in ratios["rms_m"]),
         "speed_within_25": sum(abs(x - 1) <= 0.25 for x in ratios["speed_m_s"]),
         "median_fit_seconds_per_trial": float(np.median([r["seconds"] for r in rows])) if rows else None,
         # the test's ceilings: the fit half's own statistics as the prediction, and the mean hit
         # rate of a perfect model (its own realisations against its mean)
         "first_half_within_25": sum(bool(r.get("first_half_within_25")) for r in rows),
         "mean_perfect_model_hit_rate": float(np.mean([r["perfect_model_hit_rate"] for r in rows
                                                       if "perfect_model_hit_rate" in r])) if rows else None,
         # and the data's own: the exact expected statistics against 30 s windows (sampling_ceiling)
         "sampling_ceiling": sampling_ceiling(rows),
         "total_seconds": seconds, "half_seconds": half}
    models = sorted({c for r in rows for c in r.get("models", {})})
    if models:
        s["models"] = {c: {"converged": sum(bool(r["models"][c].get("success")) for r in rows if c in r.get("models", {})),
                           "within_25": sum(bool(r["models"][c].get("within_25")) for r in rows if c in r.get("models", {})),
                           "chosen_by_heldout_nll": sum(r.get("chosen_by_heldout_nll") == c for r in rows),
                           "chosen_by_aic": sum(r.get("chosen_by_aic") == c for r in rows),
                           "median_seconds": float(np.median([r["models"][c]["seconds"] for r in rows
                                                              if c in r.get("models", {})]))}
                       for c in models}
    # conditions: median parameters; CV over the repeats of one subject in one condition
    groups: dict = {}
    for r in rows:
        if r.get("success"):
            groups.setdefault((r["vision"], r["surface"]), {}).setdefault(r["subject"], []).append(r)
    cond = {}
    for (vision, surface), subjects in sorted(groups.items()):
        allr = [r for rs in subjects.values() for r in rs]
        names = sorted(set.intersection(*(set(r["parameters"]) for r in allr)))
        cvs = {k: [float(np.std([r["parameters"][k] for r in rs], ddof=1) /
                         abs(np.mean([r["parameters"][k] for r in rs])))
                   for rs in subjects.values() if len(rs) >= 2] for k in names}
        cond[f"{vision}/{surface}"] = {
            "trials": len(allr),
            "median_parameters": {k: float(np.median([r["parameters"][k] for r in allr])) for k in names},
            "median_cv_over_repeats": {k: float(np.median(v)) for k, v in cvs.items() if v},
            "median_observed_rms_m": float(np.median([r["observed"]["rms_m"] for r in allr])),
            "median_observed_speed_m_s": float(np.median([r["observed"]["speed_m_s"] for r in allr]))}
    s["conditions"] = cond
    return s


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(ROOT / "data" / "bds"))
    ap.add_argument("--info", default=None, help="BDSinfoCOP table (default: the one in --data)")
    ap.add_argument("--quick", action="store_true", help="the first two trials, 20 s halves")
    ap.add_argument("--trials", type=int, default=None, metavar="N", help="only the first N trials")
    ap.add_argument("--half", type=float, default=None, metavar="S", help="length of each half (default 30 s)")
    ap.add_argument("--dataset", choices=sorted(DATASETS), default="bds",
                    help="file names, COP column and body units of the data set (default bds)")
    ap.add_argument("--estimator", choices=("ML", "MAP-OM"), default="ML")
    ap.add_argument("--models", default="PID,PD-delay,PID-delay",
                    help="ML only: comma-separated controllers (cip.CONTROLLERS)")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "real_cip_study.json"))
    args = ap.parse_args(argv)
    data = Path(args.data)
    spec = DATASETS[args.dataset]
    info_path = Path(args.info) if args.info else next(data.glob(spec["info"]), None) or \
        next(data.parent.glob(spec["info"]), data.parent / spec["info"].replace("*", ""))
    if not info_path.is_file():
        print(f"--info {info_path}: no such file", file=sys.stderr)
        return 2
    info = info_table(info_path)
    files = sorted(data.glob(spec["glob"]))
    if not files:
        print(f"--data {data}: no {spec['glob']} files (--dataset {args.dataset})", file=sys.stderr)
        return 2
    unknown = [p.name for p in files if trial_key(p) not in info]
    if unknown:
        print(f"--info {info_path}: no row for {', '.join(unknown[:3])}", file=sys.stderr)
        return 2
    half = 30.0
    if args.quick:
        files, half = files[:2], 20.0
    files = files[:args.trials] if args.trials else files
    half = args.half or half
    models = tuple(m.strip() for m in args.models.split(",") if m.strip())
    bad = [m for m in models if m not in cip.CONTROLLERS]
    if bad:
        print(f"--models: unknown {', '.join(bad)}; known: {', '.join(cip.CONTROLLERS)}", file=sys.stderr)
        return 2
    rows, t0 = [], time.perf_counter()
    for path in files:
        row = one_trial(path, info[trial_key(path)], half, args.estimator, models, args.dataset)
        rows.append(row)
        print(f"{row['trial']}: {row['status'][:60]} {row.get('seconds', 0):.1f} s "
              f"{'pred ' + json.dumps(row.get('predicted')) + ' obs ' + json.dumps(row.get('observed')) if 'predicted' in row else ''}",
              flush=True)
    summary = summarise(rows, half, time.perf_counter() - t0)
    print(json.dumps(summary))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    write_atomic(args.out, json.dumps({"summary": summary, "trials": rows, "versions": versions()}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
