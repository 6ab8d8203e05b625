"""Regenerate data/two_link/two_link_seed.csv (run from the repository root after `pip install .`).

    python data/two_link/make_two_link.py

The seed case of Moore & van den Bogert (2015) as fixed in docs/contracts.md §2: K = [[950, 175,
185, 50], [45, 290, 60, 26]], 12-sine platform acceleration with random phases, 60 s at
100 Hz from the upright rest state, CVODES (rtol = atol = 1e-10), noise σ_θ = 0.3°,
σ_ω = 4°/s, σ_a = 0.42 m/s²; phases and noise from numpy's default_rng (seed 0).
"""

from pathlib import Path

from colloc_problems import two_link

if __name__ == "__main__":
    out = Path(__file__).resolve().parent / "two_link_seed.csv"
    trial = two_link.simulate_trial(seed=0, name=out.name)
    trial.to_csv(out)
    print(f"wrote {out} ({trial.num_samples} rows)")
