"""Timed events: a compartment dosed at known times, its elimination rate a, dose rate b, dose
duration d and onset delay from noisy samples at 1 kHz (the phases follow the doses)."""
import numpy as np

import colloc as co

doses = [0.2, 0.8, 0.88, 1.5]  # s; the third comes while the second is still on
off = co.Mode("off", lambda t, x, p, t0: [-p["a"] * x[0]])
on = co.Mode("on", lambda t, x, p, t0: [-p["a"] * x[0] + p["b"]], duration=lambda p: p["d"], then="off")
dose = co.TimeEvent("dose", lambda p: [t + p["delay"] for t in doses], target="on")  # on after the delay
model = co.HybridModel("dosing", ["x"], [off, on], "off", time_events=[dose], parameters=["a", "b", "d", "delay"])

# the measured record: 2 s from x = 0, noise 0.01
truth = {"a": 3.0, "b": 6.0, "d": 0.15, "delay": 0.04}
t = np.arange(0, 2001) / 1000.0
x = co.simulate_hybrid(model, [0.0], (0.0, 2.0), truth, t_eval=t).x[:, 0]
record = co.Trial(t, {"x": x + np.random.default_rng(1).normal(0.0, 0.01, t.size)}, name="doses")

problem = co.HybridProblem(model, record, guess={"a": 2.0, "b": 4.0, "d": 0.1, "delay": 0.06},
                           bounds={"d": (0.01, 1.0), "delay": (0.0, 0.2)}, initial_state={"x": 0.0},
                           known_initial_state=True, max_step=0.004, noise={"x": 0.01})
result = co.solve(problem, co.Radau(degree=3))
print(result.summary(truth))
print("phases:", " ".join(result.info["phases"]["doses"]["modes"]))
