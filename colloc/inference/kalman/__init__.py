"""Exact maximum likelihood for linear-Gaussian state-space models (Kalman prediction-error method).

The model is continuous in time with parameters ``θ``::

    s'(t) = A(θ) s(t) + G(θ) x(t)
    y_k   = C(θ) s(t_k) + D(θ) x_k + e_k,        e_k ~ N(0, R(θ))

where ``x(t)`` is a vector of independent unit-variance Gaussian white sequences held
constant over each sample interval (zero-order hold: ``x(t) = x_k`` on ``[t_k, t_k + dt)``,
``x_k ~ N(0, I)``).  That is how records are usually generated (``randn`` at the sample rate,
then filtered), and the discretisation below is exact for it::

    s_{k+1} = Φ s_k + Γ x_k,     Φ = expm(A dt),   Γ = ∫₀^dt expm(A τ) dτ · G,

both read off one block exponential ``expm([[A, G], [0, 0]] dt)``.

With ``LinearGaussianModel(..., noise="continuous")`` ``x(t)`` is instead white noise in
continuous time, ``E[x(t) x(t')ᵀ] = Q_c δ(t − t')`` (``Q_c``, default ``I``, is the two-sided
power spectral density per hertz: unit ``[x]²·s``), and the discretisation is Van Loan's (1978)
exact one: ``s_{k+1} = Φ s_k + w_k`` with ``Cov w_k = Q_d = ∫₀^dt e^{Aτ} G Q_c Gᵀ e^{Aᵀτ} dτ``,
from one exponential of ``[[−A, G Q_c Gᵀ], [0, Aᵀ]] dt``.  Its parameters then mean the same
at every sample rate; ``D`` must be zero there.  Because ``x_k`` drives
both ``s_{k+1}`` (through ``Γ``) and ``y_k`` (through ``D``), the process and measurement noise
are correlated (cross-covariance ``Γ Dᵀ``); the filter below is the one-step *predictor*
form, which handles that correlation exactly.  ``D`` defaults to zero.

The initial state ``s_0`` has mean ``s̄_0`` (default zero) and covariance ``P_0`` (default the
zero matrix: the initial state is known exactly).

The negative log-likelihood of a record ``y_0 … y_{N-1}`` is, with the innovations
``ε_k = y_k − C m_k`` and their covariances ``S_k = C P_k Cᵀ + D Dᵀ + R``::

    NLL(θ) = ½ Σ_k [ log det S_k + ε_kᵀ S_k⁻¹ ε_k + m log 2π ].

Everything is a CasADi expression: one filter step is an SX :class:`casadi.Function` mapped
over the record with ``mapaccum`` (no Python loop in the evaluation path, the data enter as
a matrix input), so the exact gradient and Hessian of the NLL come from algorithmic
differentiation.  The matrix exponential is a Padé-13 approximant with scaling and squaring
(Higham 2005) written in CasADi, because ``casadi.expm`` needs the SLICOT plugin, which is not
always installed and has no derivatives.

Parameters that must be positive (a noise standard deviation, say) are kept positive with
``bounds``; alternatively parameterise the model in ``log σ`` and leave it unbounded.

Example: the controlled inverted pendulum of quiet standing (Barauskas & Krušinskienė 2007)::

    def cip(theta):
        kp, ki, kd, sigma = theta[0], theta[1], theta[2], theta[3]
        A = ca.vertcat(ca.horzcat(0, 1, 0, 0),
                       ca.horzcat((m*g*h - kp)/I, -kd/I, -ki/I, 1/I),
                       ca.horzcat(1, 0, 0, 0),
                       ca.horzcat(0, 0, 0, -1/B))
        G = ca.vertcat(0, 0, 0, A_d/B)
        C = ca.horzcat(kp, kd, ki, -1)/(m*g)
        return A, G, C, sigma**2

    model = LinearGaussianModel(["KP", "KI", "KD", "sigma"], cip, dt=0.01)
    fit = maximum_likelihood(model, cop, [1100, 10, 250, 1e-4],
                             bounds={"sigma": (1e-9, None)})
"""

from .ensemble import free_simulation_check, record_statistics
from .estimation import MLResult, maximum_likelihood
from .expm import expm, expm_squarings, expm_squarings_for, van_loan
from .likelihood import k_step_predictions, negative_log_likelihood, one_step_predictions, simulate
from .model import LinearGaussianModel

__all__ = [
    "LinearGaussianModel",
    "MLResult",
    "expm",
    "expm_squarings",
    "expm_squarings_for",
    "free_simulation_check",
    "k_step_predictions",
    "maximum_likelihood",
    "negative_log_likelihood",
    "one_step_predictions",
    "record_statistics",
    "simulate",
    "van_loan",
]
