"""Regenerate data/two_link/two_link_delay.csv (run from the repository root after `pip install .`).

    python data/two_link/make_two_link_delay.py

The two-link seed case with a delayed feedback, T = −K·x(t − τ) (colloc_problems.two_link_delay):
the seed-case K, τ = 23.7 ms, the 12-sine platform acceleration with the seed-0 phases,
60 s at 100 Hz from the upright rest state (constant history), method of steps with RK4
on a 2.5 ms step, noise σ_θ = 0.3°, σ_ω = 4°/s, σ_a = 0.42 m/s² from numpy's
default_rng([0, 1]).
"""

from pathlib import Path

from colloc_problems import two_link_delay

if __name__ == "__main__":
    out = Path(__file__).resolve().parent / "two_link_delay.csv"
    trial = two_link_delay.simulate_trial(seed=0, name=out.name)
    trial.to_csv(out)
    print(f"wrote {out} ({trial.num_samples} rows)")
