"""Regenerate data/cip/cip.csv and data/cip/cip_cop_only.csv (run from the repository root).

    python data/cip/make_cip.py

Synthetic quiet-standing record of the controlled inverted pendulum (colloc_problems.cip):
gains colloc_problems.cip.TRUE (K_P = 1180 N·m/rad, K_I = 40 N·m/(rad·s), K_D = 245 N·m·s/rad),
body and disturbance filter of Barauskas & Krušinskienė (2007) (I = 76 kg·m², m = 60 kg,
h = 0.87 m, A = 1000, B = 80), 60 s at 100 Hz from rest, unit white noise held over each
sample (numpy default_rng(seed=0)), exact matrix-exponential integration, Gaussian COP
noise σ = 0.1 mm.  cip.csv carries the true disturbance torque (the "known disturbance"
case); cip_cop_only.csv is the same record without it (the COP-only case).
"""

from pathlib import Path

import colloc as co
from colloc_problems import cip

if __name__ == "__main__":
    here = Path(__file__).resolve().parent
    trial = cip.simulate_trial(seed=0, cop_noise=cip.COP_NOISE, name="cip.csv")
    trial.to_csv(here / "cip.csv")
    cop_only = co.Trial(trial.time, {"cop": trial["cop"]}, name="cip_cop_only.csv")
    cop_only.to_csv(here / "cip_cop_only.csv")
    print(f"wrote {here / 'cip.csv'} and {here / 'cip_cop_only.csv'} ({trial.num_samples} rows)")
