"""Where a hybrid fit starts its collocation states (:func:`colloc.solving.hybrid._state_guess`):
the measured states smoothed inside each phase, never across a switching time."""

from __future__ import annotations

import numpy as np

from colloc.solving import hybrid as solving


def test_the_measured_states_are_smoothed_inside_each_phase_and_keep_their_jumps():
    t = np.arange(0.0, 2.0, 0.01)
    true = np.where(t < 1.0, 1.0 - (t - 0.5) ** 2, -0.5 - (t - 1.5) ** 2)  # a jump of −1.5 at t = 1
    y = true + np.random.default_rng(0).normal(0.0, 0.01, t.size)
    smooth = solving._smoothed(t, y, [1.0])

    def rms(v):
        return float(np.sqrt(np.mean(v ** 2)))

    assert rms(smooth - true) < 0.7 * rms(y - true)  # a 9-sample cubic filter: about 0.6
    k = int(np.searchsorted(t, 1.0))  # the first sample of the second phase
    assert abs((smooth[k] - smooth[k - 1]) - (true[k] - true[k - 1])) < 0.03  # the jump stays a jump
    blurred = solving._smoothed(t, y, [])  # across the jump: the samples beside it are pulled over
    assert abs(blurred[k - 1] - true[k - 1]) > 0.1
    short = solving._smoothed(t[:4], y[:4], [])  # too few samples: as measured
    assert np.array_equal(short, y[:4])
    guess = solving._state_guess(_Problem(), _Trial(t, y), None, np.zeros(2), [1.0])
    assert abs(guess(0.5)[0] - smooth[50]) < 1e-12 and guess(0.5)[1] == 0.0


class _Problem:
    states = ("h", "v")


class _Trial:
    def __init__(self, time, h):
        self.time, self._h = time, h

    def __contains__(self, name):
        return name == "h"

    def __getitem__(self, name):
        return self._h
