"""Stick–slip: a mass on a spring dragged by a moving belt with Coulomb friction; its spring
stiffness k and its static and kinetic friction coefficients from noisy positions."""
import numpy as np
from scipy.signal import find_peaks

import colloc as co

g, belt = 9.81, 0.2  # m/s², belt speed m/s (per unit mass: k in N/m/kg)
stick = co.Mode("stick", lambda t, x, p, t0: [belt, 0.0 * x[1]])  # carried by the belt
slip = co.Mode("slip", lambda t, x, p, t0: [x[1], -p["k"] * x[0] + p["mu_k"] * g])
modes = [co.Guard("break", lambda t, x, p: p["k"] * x[0] - p["mu_s"] * g, +1, ["stick"], "slip"),
         co.Guard("lock", lambda t, x, p: x[1] - belt, +1, ["slip"], "stick")]
oscillator = co.HybridModel("stick-slip", states=["x", "v"], modes=[stick, slip], initial_mode="stick",
                            guards=modes, parameters=["k", "mu_s", "mu_k"])

# the measured record: 12 s of positions at 100 Hz with 1 mm noise
truth = {"k": 4.0, "mu_s": 0.4, "mu_k": 0.25}
t = np.arange(0.0, 12.0, 0.01)
x = co.simulate_hybrid(oscillator, [0.5, belt], (0.0, t[-1]), truth, t_eval=t).x[:, 0]
x = x + np.random.default_rng(2).normal(0.0, 0.001, t.size)
record = co.Trial(t, {"x": x}, name="belt")

# two slips in the record: it breaks away near its peaks and locks near its troughs
turns = np.sort(t[np.concatenate([find_peaks(x, prominence=0.05)[0], find_peaks(-x, prominence=0.05)[0]])])
problem = co.HybridProblem(oscillator, record, guess={"k": 3.0, "mu_s": 0.35, "mu_k": 0.2},
                           bounds={"k": (0, 100), "mu_s": (0, 2), "mu_k": (0, 2)}, fit={"x": 1 / 0.001**2},
                           initial_state={"v": belt}, sequence=["stick", "slip"] * 2 + ["stick"], switch_times=turns)
result = co.solve(problem, co.Radau(degree=3))
print(result.summary(truth))
print("switches at", np.round(result.info["phases"]["belt"]["switch_times"], 3), "s")
