"""Held-out validation of the CIP on real quiet standing (Santos & Duarte 2016, BDS).

    python benchmarks/real_cip_study.py [--data DIR] [--info BDSinfoCOP.txt] [--quick] [--out JSON]

For every trial ``BDS*.txt.gz`` in ``--data`` (default: the shipped four trials in data/bds):
the subject's body from height and mass (``cip.body``, Winter 2009), the antero-posterior COP
(``COPx``, cm -> m), MAP-OM collocation on the first half (the mean COP position identified as
``cop_offset``), then the identified model (gains, the paper's disturbance filter A, B) is
simulated (10 realisations of 30 s, seed 0..9, no measurement noise, after a 10 s settling
period) and its COP RMS about the mean and mean COP speed (4th-order 10 Hz zero-lag Butterworth
low-pass, as the BDS check) are compared with the held-out second half.  A trial counts as
predicted when both are within 25 % of the observed.  A fit that fails is recorded with its
status, never raised.  Also: stability of the identified closed loop and K_P > m g h.

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


def info_table(path: Path) -> dict:
    with open(path, newline="") as handle:
        return {r["Trial"]: r for r in csv.DictReader(handle, delimiter="\t")}


def stats(cop: np.ndarray, rate: float) -> tuple[float, float]:
    """(RMS about the mean, mean speed) of a 1-D COP in m, after a 10 Hz low-pass."""
    b, a = butter(2, 10.0 / (rate / 2))
    x = filtfilt(b, a, cop)
    return float(np.std(x)), float(np.mean(np.abs(np.diff(x))) * rate)


def predicted(gains: dict, body: dict, duration: float, rate: float, runs: int = 10) -> tuple[float, float]:
    rms, speed = [], []
    settle = int(10 * rate)
    for seed in range(runs):
        t = cip.simulate_trial(gains, duration=duration + 10.0, rate=rate, seed=seed, cop_noise=0.0, body=body)
        r, s = stats(t["cop"][settle:], rate)
        rms.append(r)
        speed.append(s)
    return float(np.mean(rms)), float(np.mean(speed))


def stable(gains: dict, body: dict) -> bool:
    """Roots of I s³ + K_D s² + (K_P − m g h) s + K_I (the PID closed loop) in the left half-plane."""
    roots = np.roots([body["I"], gains["KD"], gains["KP"] - body["m"] * body["g"] * body["h"], gains["KI"]])
    return bool(np.all(roots.real < 0))


def one_trial(path: Path, row: dict, half: float) -> dict:
    body = cip.body(height=float(row["Height"]) / 100, mass=float(row["Weight"]))
    trial = cip.load_trial(path, columns={"cop": "COPx"})
    rate = 1.0 / float(np.median(np.diff(trial.time)))
    n = int(round(half * rate))
    fit_part = co.Trial(trial.time[:n], {"cop": trial["cop"][:n]}, name=path.name)
    held = trial["cop"][n:2 * n]
    out = {"trial": path.name, "vision": row.get("Vision"), "surface": row.get("Surface"), "body": body}
    start = time.perf_counter()
    try:
        result = co.solve(cip.problem([fit_part], body=body), throw=False)
    except co.CollocError as exc:
        out.update(status=f"error: {exc}", seconds=time.perf_counter() - start)
        return out
    out["seconds"] = time.perf_counter() - start
    out["status"] = result.status
    out["success"] = bool(result.success)
    gains = {k: float(result.parameters[k]) for k in cip.GAINS}
    out["parameters"] = {k: float(v) for k, v in result.parameters.items()}
    out["standard_errors"] = {k: float(v) for k, v in result.standard_errors.items()}
    out["stable"] = stable(gains, body)
    out["KP_over_mgh"] = gains["KP"] / (body["m"] * body["g"] * body["h"])
    obs = stats(held, rate)
    pred = predicted(gains, body, half, rate)
    out["observed"] = {"rms_m": obs[0], "speed_m_s": obs[1]}
    out["predicted"] = {"rms_m": pred[0], "speed_m_s": pred[1]}
    out["within_25"] = bool(result.success and all(abs(p / o - 1) <= 0.25 for p, o in zip(pred, obs)))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(ROOT / "data" / "bds"))
    ap.add_argument("--info", default=None, help="BDSinfoCOP table (default: the one in --data)")
    ap.add_argument("--quick", action="store_true", help="the first two trials, 20 s halves")
    ap.add_argument("--trials", type=int, default=None, metavar="N", help="only the first N trials")
    ap.add_argument("--half", type=float, default=None, metavar="S", help="length of each half (default 30 s)")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "real_cip_study.json"))
    args = ap.parse_args(argv)
    data = Path(args.data)
    info_path = Path(args.info) if args.info else next(data.glob("BDSinfoCOP*.txt"), None) or \
        data.parent / "BDSinfoCOP.txt"
    info = info_table(info_path)
    files = sorted(data.glob("BDS*.txt.gz"))
    half = 30.0
    if args.quick:
        files, half = files[:2], 20.0
    files = files[:args.trials] if args.trials else files
    half = args.half or half
    rows, t0 = [], time.perf_counter()
    for path in files:
        row = one_trial(path, info[path.name.split(".")[0]], half)
        rows.append(row)
        print(f"{row['trial']}: {row['status']} {row.get('seconds', 0):.1f} s "
              f"{'pred ' + json.dumps(row.get('predicted')) + ' obs ' + json.dumps(row.get('observed')) if 'predicted' in row else ''}",
              flush=True)
    ok = [r for r in rows if r.get("within_25")]
    summary = {"trials": len(rows), "within_25_percent": len(ok),
               "fraction_within_25": len(ok) / len(rows) if rows else 0.0,
               "stable": sum(bool(r.get("stable")) for r in rows),
               "total_seconds": time.perf_counter() - t0, "half_seconds": half}
    print(json.dumps(summary))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    write_atomic(args.out, json.dumps({"summary": summary, "trials": rows, "versions": versions()}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
