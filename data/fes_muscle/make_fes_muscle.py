"""Make the shipped `fes-muscle` records with the event-driven simulator (colloc.simulate_hybrid).

Four isometric trials of 2 s at 1 kHz, pulse trains at 10, 20, 30 and 50 Hz from 0.1 s to
1.4 s (then relaxation), recruitment α = 1.0, 0.8, 0.9, 0.6; the seed-case parameters of the
contract (Wieber & Billet 2006 §4).  `clean_<f>hz.csv` without noise, `noisy_<f>hz.csv` with
Gaussian force noise σ = 2 N (seeds 1–4).  Run:  python data/fes_muscle/make_fes_muscle.py
"""

from pathlib import Path

from colloc_problems import fes_muscle as fm

HERE = Path(__file__).resolve().parent
TRAINS = ((10, 1.0), (20, 0.8), (30, 0.9), (50, 0.6))


def main() -> None:
    for seed, (freq, alpha) in enumerate(TRAINS, start=1):
        clean = fm.make_trial(freq, alpha=alpha)
        fm.write_trial(clean, HERE / f"clean_{freq}hz.csv")
        noisy = fm.make_trial(freq, alpha=alpha, noise_std=2.0, seed=seed)
        fm.write_trial(noisy, HERE / f"noisy_{freq}hz.csv")


if __name__ == "__main__":
    main()
