"""colloc: identify parameters of biomechanical models from measured trajectories.

Direct collocation of implicit dynamics ``0 = f(ẋ, x, r, u, p, t)`` with CasADi and IPOPT.
The public API is re-exported here; everything else is internal.
"""

__version__ = "0.1.0"

from . import kalman as kalman, signals as signals  # noqa: E402
from .bootstrap import Bootstrap as Bootstrap, bootstrap as bootstrap  # noqa: E402
from .dde import DDESimulation as DDESimulation, simulate_dde as simulate_dde  # noqa: E402
from .delay_margin import Crossing as Crossing, DelayMargin as DelayMargin, delay_margin as delay_margin  # noqa: E402
from .diagnostics import Identifiability as Identifiability, identifiability as identifiability  # noqa: E402
from .integrators import Cvodes as Cvodes, RungeKutta as RungeKutta  # noqa: E402
from .optimizers import LBFGS as LBFGS, ReducedIpopt as ReducedIpopt, SteepestDescent as SteepestDescent  # noqa: E402
from .shooting import (  # noqa: E402
    Adjoint as Adjoint,
    Forward as Forward,
    MultipleShooting as MultipleShooting,
    SingleShooting as SingleShooting,
)
from .errors import (  # noqa: E402
    CollocError as CollocError,
    CollocInputError as CollocInputError,
    DataError as DataError,
    ExtraColumnsWarning as ExtraColumnsWarning,
    ModelError as ModelError,
    OptionsError as OptionsError,
    ProblemError as ProblemError,
    SolveFailed as SolveFailed,
)
from .model import Model as Model  # noqa: E402
from .problem import Problem as Problem  # noqa: E402
from .profile import Profile as Profile, profile as profile  # noqa: E402
from .result import Result as Result  # noqa: E402
from .simulate import Simulation as Simulation, simulate as simulate  # noqa: E402
from .solve import Ipopt as Ipopt, IterationInfo as IterationInfo, solve as solve  # noqa: E402
from .transcriptions import (  # noqa: E402
    AbstractMethod as AbstractMethod,
    AbstractTranscription as AbstractTranscription,
    BackwardEuler as BackwardEuler,
    Midpoint as Midpoint,
    Trapezoidal as Trapezoidal,
)
from .trial import Trial as Trial  # noqa: E402

__all__ = [
    "Adjoint",
    "Cvodes",
    "Forward",
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
]
