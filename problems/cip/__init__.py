"""Controlled inverted pendulum (CIP) of quiet standing (Barauskas & Krušinskienė 2007).

Model (docs/contracts.md §2 ``cip``; the paper's eq. 1 and 4)::

    I·u'' − m g h·u = T_d − T_c,     T_c = K_P u + K_I ∫₀ᵗ u dt + K_D u'
    T_d + B·T_d' = A·x(t)            (x: unit white noise)
    u_cop = h·u − I·u''/(m g)        (= (T_c − T_d)/(m g) by the equation of motion)

States: ``sway`` u (rad), ``sway_rate`` u' (rad/s), ``sway_integral`` ∫₀ᵗ u (rad·s, zero at
the first sample by definition) and, when it is modelled, ``disturbance`` T_d (N·m).
Unknown parameters ``KP``, ``KI``, ``KD``, bounded by the physiological ranges of the
paper's Table 1 (after Peterka 2000) and guessed at its "centre normal" values.

White noise convention.  The paper generates x with Matlab's ``randn`` at the 100 Hz
sample rate and low-pass filters it; we do the same: x is a sequence of independent
N(0, 1) values *held over each sample interval*.  The data generator integrates the
linear system exactly over each interval (matrix exponential), and the process-noise
formulation declares x as a held free input (``free_input(..., hold=True)``) whose exact
Gaussian prior is ``½ Σ_k x_k²``.

Formulations (:data:`FORMULATIONS`, all on the same model conventions):

``known``
    T_d measured (the ``disturbance`` column): least-squares fit of the COP.
``J_u``
    The paper's §4.1: T_d replaced by a filtered-noise realization of the right
    statistics (not the one that acted), fit of the COP time law (eq. 2–3).
``J_S``
    The same surrogate T_d, fit of the stabilogram diffusion function (eq. 5–6) up to
    Δt = 10 s.
``J_T``
    T_d a free trajectory, ½∫T_d'² dt minimised while the COP is fitted (eq. 19, solved
    simultaneously instead of the paper's alternation).  :func:`jt_inverse_dynamics` is the
    paper's own procedure (COM from the low-pass filtered COP, T_d by inverse dynamics,
    eq. 18).
``MAP``
    T_d driven by the unknown white noise x with its exact prior (process-noise
    formulation): the joint maximum a-posteriori trajectory and gains.  Biased: it drives
    K_D to its lower bound (see ``MAP-OM``).
``MAP-OM``
    ``MAP`` plus the Onsager–Machlup term ½∫∇·f dt = −T·K_D/(2I) + const, the Jacobian of
    the map from noise to path that the joint MAP leaves out (it grows with K_D, so without
    it the damping gain is pushed down).  This is the path likelihood; it agrees with the
    exact ``ML`` (see the study in benchmarks/cip_study.py).  The default for COP-only data.
``ML`` (:func:`ml_estimate`)
    Exact maximum likelihood of the gains by the Kalman-filter prediction-error method
    (the CIP with this disturbance is linear-Gaussian).

Real subjects (Santos & Duarte 2016 BDS records, ``benchmarks/real_cip_study.py``): the body
from height and mass (:func:`body`), gains bounded by :data:`WIDE_RANGES_PER_MGH`
(``bounds="wide"``), the disturbance filter's A and B fitted (``fit_disturbance=True``), and
for the ML the COP noise σ and the controllers of :data:`CONTROLLERS` (PID, PD, and PD and PID
with a feedback delay, :func:`ml_model`).

Modules
-------
constants
    The paper's subject, filter and Table 1–2 values, the synthetic data's truth, the gain bounds.
pendulum
    The CIP as a :class:`colloc.Model`, its COP, :func:`load_trial` and a subject's :func:`body`.
generator
    The data generator (:func:`simulate_trial`, exact over each held noise sample).
formulations
    :func:`problem` in each formulation, its start from the COP, :func:`jt_inverse_dynamics`.
kalman_model
    The linear-Gaussian model of the Kalman ML (:func:`ml_model`), its controllers and noise models.
real
    Real records: the COP's noise floor, the record's checks, the plausible gains.
methods
    :func:`stochastic_problem` and the hooks of ``colloc identify cip --method kalman-ml``.

Every name is importable from ``colloc_problems.cip`` as before the split.
"""

from .constants import (
    BODY,
    CENTRE_NORMAL,
    COP_NOISE,
    DEFAULT_DATA,
    FILTER,
    FILTER_RANGES,
    FORMULATIONS,
    GAINS as GAINS,
    OFFSET_AUTO as OFFSET_AUTO,
    OPTIONAL_COLUMNS,
    PAPER_TABLE2,
    RANGES,
    REQUIRED_COLUMNS,
    TRUE,
    WIDE_RANGES_PER_MGH,
    gain_bounds,
)
from .formulations import com_from_cop, initial_trajectories, jt_inverse_dynamics, problem, sdf_objective
from .generator import discrete_system, simulate_trial, surrogate_disturbance
from .kalman_model import (
    CONTROLLERS,
    DELAY_RANGE,
    DIFFUSE_SD as DIFFUSE_SD,
    LOWPASS_ZETA as LOWPASS_ZETA,
    LOWPASS_ZETA_LP as LOWPASS_ZETA_LP,
    NOISE_MODELS as NOISE_MODELS,
    RECORDING_LOWPASS,
    SIGMA_RANGE,
    SWAY_RANGES as SWAY_RANGES,
    SWAY_START as SWAY_START,
    ml_estimate,
    ml_model,
)
from .methods import (
    COHORT_CONTROLLER as COHORT_CONTROLLER,
    OWN_METHODS as OWN_METHODS,
    cohort_options as cohort_options,
    default_method as default_method,
    identify_method as identify_method,
    prediction_model as prediction_model,
    select_controller,
)
from .pendulum import (
    WINTER_ANKLE_HEIGHT as WINTER_ANKLE_HEIGHT,
    WINTER_FOOT_MASS as WINTER_FOOT_MASS,
    WINTER_SEGMENTS as WINTER_SEGMENTS,
    body,
    cop_from_states,
    load_trial,
    model,
)
from .real import (
    COP_SPAN_MAX as COP_SPAN_MAX,
    FLOOR_BAND as FLOOR_BAND,
    NESTED_START_KI_PER_MGH as NESTED_START_KI_PER_MGH,
    PLAUSIBLE,
    SECOND_START_NOISE as SECOND_START_NOISE,
    SECOND_START_PER_MGH as SECOND_START_PER_MGH,
    SHORT_RECORD_S,
    SIGMA_BELOW_FLOOR as SIGMA_BELOW_FLOOR,
    SWAY_SECOND_START_KI_PER_MGH as SWAY_SECOND_START_KI_PER_MGH,
    THIRD_START_NOISE as THIRD_START_NOISE,
    THIRD_START_PER_MGH as THIRD_START_PER_MGH,
    noise_floor,
    plausibility,
)
from .stochastic import stochastic_problem

__all__ = [
    "BODY",
    "CENTRE_NORMAL",
    "CONTROLLERS",
    "COP_NOISE",
    "DEFAULT_DATA",
    "DELAY_RANGE",
    "FILTER",
    "FILTER_RANGES",
    "FORMULATIONS",
    "OPTIONAL_COLUMNS",
    "PAPER_TABLE2",
    "PLAUSIBLE",
    "RANGES",
    "RECORDING_LOWPASS",
    "REQUIRED_COLUMNS",
    "SHORT_RECORD_S",
    "SIGMA_RANGE",
    "TRUE",
    "WIDE_RANGES_PER_MGH",
    "body",
    "com_from_cop",
    "cop_from_states",
    "discrete_system",
    "gain_bounds",
    "initial_trajectories",
    "jt_inverse_dynamics",
    "load_trial",
    "ml_estimate",
    "ml_model",
    "model",
    "noise_floor",
    "plausibility",
    "problem",
    "sdf_objective",
    "select_controller",
    "simulate_trial",
    "stochastic_problem",
    "surrogate_disturbance",
]
