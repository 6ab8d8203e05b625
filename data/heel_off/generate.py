"""Regenerate the shipped `heel-off` records (seeded; see README.md).

    python data/heel_off/generate.py
"""

from __future__ import annotations

import json
from pathlib import Path

from colloc_problems import heel_off

HERE = Path(__file__).resolve().parent


def main() -> None:
    events = {}
    for name, duration, noise, pulses, tau in (("heel_off.csv", 8.0, True, heel_off.PULSES, None),
                                               ("heel_off_clean.csv", 8.0, False, heel_off.PULSES, None),
                                               ("flat.csv", 4.0, True, ((0.5, -2.0, 0.6), (2.5, 1.0, 0.6)), None),
                                               ("heel_off_delay.csv", 2.0, True, heel_off.DELAY_PULSES,
                                                heel_off.TAU_TRUE)):
        trial, sim = heel_off.make_trial(duration, pulses=pulses, noise=noise, seed=1, name=name, tau=tau)
        heel_off.write_trial(trial, HERE / name)
        events[name] = [{"time": e.time, "kind": e.kind, "contact": e.name, "before": e.before, "after": e.after}
                        for e in sim.events]
        print(f"{name}: {len(trial.time)} samples, {len(sim.events)} contact events")
    (HERE / "events.json").write_text(json.dumps(events, indent=1) + "\n")


if __name__ == "__main__":
    main()
