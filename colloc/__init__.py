"""colloc: identify parameters of biomechanical models from measured trajectories.

Direct collocation of implicit dynamics ``0 = f(ẋ, x, r, u, p, t)`` with CasADi and IPOPT.
The public API is re-exported here; everything else is internal.  The sub-packages are the
layers, bottom up (each imports only from the layers below it; ``tests/test_layers.py``
checks it):

* ``base``: errors, names, atomic files, versions;
* ``signals``, ``definition`` (model, trial, problem), ``stability`` (delay margin);
* ``simulation`` (ODE, DDE), ``transcription`` (methods, grid, NLP assembly),
  ``inference`` (covariance, identifiability, Kalman likelihood), ``results``;
* ``solving`` (``solve`` and the collocation path), ``shooting`` (the baselines);
* ``studies`` (bootstrap, profile, compare);
* ``cli``, the command line.
"""

from .base.versions import __version__ as __version__, versions as versions
from .base.files import atomic_path as atomic_path, write_atomic as write_atomic
from .base.errors import (
    CollocError as CollocError,
    CollocInputError as CollocInputError,
    DataError as DataError,
    ExtraColumnsWarning as ExtraColumnsWarning,
    ModelError as ModelError,
    OptionsError as OptionsError,
    ProblemError as ProblemError,
    SolveFailed as SolveFailed,
)
from . import signals as signals
from .definition.model import Model as Model
from .definition.trial import Trial as Trial
from .definition.problem import Problem as Problem
from .stability.delay_margin import Crossing as Crossing, DelayMargin as DelayMargin, delay_margin as delay_margin
from .simulation.integrators import Cvodes as Cvodes, RungeKutta as RungeKutta
from .simulation.ode import Simulation as Simulation, simulate as simulate
from .simulation.dde import DDESimulation as DDESimulation, simulate_dde as simulate_dde
from .transcription.methods import (
    HermiteSimpson as HermiteSimpson,
    Radau as Radau,
    AbstractMethod as AbstractMethod,
    AbstractTranscription as AbstractTranscription,
    BackwardEuler as BackwardEuler,
    Midpoint as Midpoint,
    Trapezoidal as Trapezoidal,
)
from .inference import kalman as kalman
from .inference.identifiability import Identifiability as Identifiability, identifiability as identifiability
from .results.result import Result as Result
from .results.plotting import save_figure as save_figure
from .solving.ipopt import Ipopt as Ipopt, IterationInfo as IterationInfo
from .solving.solve import solve as solve
from .shooting.optimizers import LBFGS as LBFGS, ReducedIpopt as ReducedIpopt, SteepestDescent as SteepestDescent
from .shooting.methods import (
    Adjoint as Adjoint,
    Forward as Forward,
    MultipleShooting as MultipleShooting,
    SingleShooting as SingleShooting,
)
from .studies.bootstrap import Bootstrap as Bootstrap, bootstrap as bootstrap
from .studies.profile import Profile as Profile, profile as profile

__all__ = [
    "Adjoint",
    "Cvodes",
    "Forward",
    "HermiteSimpson",
    "LBFGS",
    "MultipleShooting",
    "ReducedIpopt",
    "RungeKutta",
    "SingleShooting",
    "SteepestDescent",
    "AbstractMethod",
    "AbstractTranscription",
    "BackwardEuler",
    "Bootstrap",
    "CollocError",
    "CollocInputError",
    "Crossing",
    "DDESimulation",
    "DelayMargin",
    "DataError",
    "ExtraColumnsWarning",
    "Identifiability",
    "Ipopt",
    "IterationInfo",
    "Midpoint",
    "Model",
    "ModelError",
    "OptionsError",
    "Problem",
    "ProblemError",
    "Profile",
    "Radau",
    "Result",
    "Simulation",
    "SolveFailed",
    "Trapezoidal",
    "Trial",
    "bootstrap",
    "delay_margin",
    "identifiability",
    "profile",
    "simulate",
    "simulate_dde",
    "solve",
    # for scripts of one's own: versions for a result document, files written atomically
    "atomic_path",
    "save_figure",
    "versions",
    "write_atomic",
]
