"""A bouncing ball: its restitution coefficient e and quadratic drag c from noisy heights."""
import numpy as np

import colloc as co

g = 9.81  # m/s²
flight = co.Mode("flight", lambda t, x, p, t0: [x[1], -g - p["c"] * x[1] * abs(x[1])])
bounce = co.Guard("bounce", lambda t, x, p: x[0], direction=-1,  # the height falls through 0
                  reset=lambda t, x, p: [x[0], -p["e"] * x[1]])   # the velocity turns, times e
ball = co.HybridModel("ball", states=["h", "v"], modes=[flight], initial_mode="flight",
                      guards=[bounce], parameters=["e", "c"])

# the measured record: a drop from 1.2 m, heights at 100 Hz with 2 mm noise
truth = {"e": 0.8, "c": 0.05}
t = np.arange(0.0, 2.5, 0.01)
heights = co.simulate_hybrid(ball, [1.2, 0.0], (0.0, t[-1]), truth, t_eval=t).x[:, 0]
heights = heights + np.random.default_rng(1).normal(0.0, 0.002, t.size)
drop = co.Trial(t, {"h": heights}, name="drop")

# the record shows four bounces: five flights; the bounce times are unknowns of the fit
problem = co.HybridProblem(ball, drop, guess={"e": 0.7, "c": 0.02}, bounds={"e": (0, 1), "c": (0, 1)},
                           fit={"h": 1 / 0.002**2}, sequence=["flight"] * 5)
result = co.solve(problem, co.Radau(degree=3))
print(result.summary(truth))
print("bounces at", np.round(result.info["phases"]["drop"]["switch_times"], 4), "s")
