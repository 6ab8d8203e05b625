"""Regenerate data/pendulum/pendulum.csv (run from the repository root after `pip install .`).

    python data/pendulum/make_pendulum.py

The data are synthetic: colloc_problems.pendulum.simulate_trial with its defaults (p = 10 s⁻²,
θ(0) = 1 rad, ω(0) = 0, 10 s at 100 Hz, CVODES with rtol = atol = 1e-12) and Gaussian
noise σ = 0.05 rad on θ from numpy's default_rng(seed=0).
"""

from pathlib import Path

from colloc_problems import pendulum

if __name__ == "__main__":
    out = Path(__file__).resolve().parent / "pendulum.csv"
    trial = pendulum.simulate_trial(noise_std=pendulum.NOISE_STD, seed=0, name=out.name)
    trial.to_csv(out)
    print(f"wrote {out} ({trial.num_samples} rows)")
