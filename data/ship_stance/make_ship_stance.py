"""Regenerate ship_stance_seed.csv: the CONTRACTS §2 ship-stance seed case.

The 4-link human under the seed-case gains on a deck moved by ``ship_motion(seed=0)`` (sums
of sines: roll 0.08 rad, pitch 0.03 rad, yaw 0.02 rad, surge 0.3 m, sway 0.5 m, heave 0.8 m
over wave periods 2.2–14 s), integrated by scipy's solve_ivp (LSODA, rtol 1e-10) from upright
rest, 10 s at 100 Hz, noise σ = 0.5° on angles, 2°/s on rates, 1e-4·std on ship columns; deck
force and moment noise-free.  Run: ``python data/ship_stance/make_ship_stance.py``.
"""

from pathlib import Path

import numpy as np

from colloc_problems import ship_stance

HERE = Path(__file__).resolve().parent


def main(duration: float = 10.0) -> Path:
    trial = ship_stance.simulate_trial(duration=duration, seed=0)
    columns = ["time", *ship_stance.REQUIRED_COLUMNS, *ship_stance.OPTIONAL_COLUMNS]
    table = np.column_stack([trial.time] + [trial[c] for c in columns[1:]])
    path = HERE / "ship_stance_seed.csv"
    np.savetxt(path, table, delimiter=",", header=",".join(columns), comments="", fmt="%.10g")
    return path


if __name__ == "__main__":
    print(main())
