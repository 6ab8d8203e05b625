"""Regenerate the ship-stance records: the docs/contracts.md §2 seed case and a sea-state case.

``ship_stance_seed.csv``: the 4-link human under the seed-case gains on a deck moved by
``ship_motion(seed=0)`` (sums of sines: roll 0.08 rad, pitch 0.03 rad, yaw 0.02 rad, surge
0.3 m, sway 0.5 m, heave 0.8 m over wave periods 2.2–14 s).

``ship_stance_sea.csv``: the same human and gains on the MSS supply vessel in a JONSWAP sea,
Hs 2.5 m, Tp 8 s, γ 3.3, waves travelling 150° off the bow (aft and to starboard: bow-quartering
seas from port; see ``colloc.ship_motion``), standing 25 m aft of, 3 m to port of and
3 m above the vessel's CG; phases seeded 0: ``colloc.ship_motion(SEA, point=POINT, seed=0)``.

Both: integrated by scipy's solve_ivp (LSODA, rtol 1e-10) from upright rest, 10 s at 100 Hz,
noise σ = 0.5° on angles, 2°/s on rates, 1e-4·std on ship columns (numpy
``default_rng([0, 1])``); deck force and moment noise-free.
Run: ``python data/ship_stance/make_ship_stance.py``.
"""

from pathlib import Path

import numpy as np

import colloc as co
from colloc_problems import ship_stance

HERE = Path(__file__).resolve().parent
SEA = co.SeaState(hs=2.5, tp=8.0, gamma=3.3, heading=150.0)
POINT = (-25.0, 3.0, 3.0)


def _write(trial, path: Path) -> Path:
    columns = ["time", *ship_stance.REQUIRED_COLUMNS, *ship_stance.OPTIONAL_COLUMNS]
    table = np.column_stack([trial.time] + [trial[c] for c in columns[1:]])
    np.savetxt(path, table, delimiter=",", header=",".join(columns), comments="", fmt="%.10g")
    return path


def main(duration: float = 10.0) -> list[Path]:
    seed = _write(ship_stance.simulate_trial(duration=duration, seed=0), HERE / "ship_stance_seed.csv")
    sea = ship_stance.simulate_trial(duration=duration, seed=0, ship=co.ship_motion(SEA, point=POINT, seed=0))
    return [seed, _write(sea, HERE / "ship_stance_sea.csv")]


if __name__ == "__main__":
    print(*main(), sep="\n")
