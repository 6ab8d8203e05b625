"""colloc: identify parameters of biomechanical models from measured trajectories.

Direct collocation of implicit dynamics ``0 = f(ẋ, x, r, u, p, t)`` with CasADi and IPOPT.
The public API is re-exported here; everything else is internal.  The sub-packages are the
layers, bottom up (each imports only from the layers below it; ``tests/test_layers.py``
checks it):

* ``base``: errors, names, atomic files, versions;
* ``signals``, ``definition`` (model, trial, problem), ``stability`` (delay margin),
  ``multibody`` (spatial open chains on a moving base);
* ``simulation`` (ODE, DDE), ``transcription`` (methods, grid, NLP assembly),
  ``inference`` (covariance, identifiability, Kalman likelihood), ``results``,
  ``seakeeping`` (ship-deck motion from a sea state, ship-motion files);
* ``solving`` (``solve`` and the collocation path), ``shooting`` (the baselines);
* ``studies`` (bootstrap, profile, compare);
* ``cli``, the command line.
"""

import typing as _typing
from importlib import import_module as _import_module

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
from .base.versions import __version__ as __version__

#: Where each public name lives.  They are imported on first use (PEP 562), so that
#: ``import colloc`` and the command line's ``--help`` do not pay for CasADi, SciPy, pandas
#: and matplotlib until something needs them.
_LAZY = {
    "versions": "base.versions",
    "atomic_path": "base.files",
    "write_atomic": "base.files",
    "Model": "definition.model",
    "Trial": "definition.trial",
    "Problem": "definition.problem",
    "StochasticProblem": "definition.stochastic",
    "KalmanML": "solving.kalman_ml",
    "ContactProblem": "definition.contact_problem",
    "Complementarity": "solving.complementarity",
    "on_one_grid": "solving.kalman_ml",
    "select_model": "studies.select",
    "flagged_implausible": "studies.select",
    "ModelSelection": "studies.select",
    "Body": "multibody.chain",
    "Chain": "multibody.chain",
    "ChainEquations": "multibody.chain",
    "bryant": "multibody.chain",
    "nrmse": "multibody.chain",
    "MotionRAO": "seakeeping.motion",
    "SeaState": "seakeeping.motion",
    "ShipMotion": "seakeeping.motion",
    "jonswap": "seakeeping.motion",
    "ship_motion": "seakeeping.motion",
    "read_ship_motion": "seakeeping.files",
    "Crossing": "stability.delay_margin",
    "DelayMargin": "stability.delay_margin",
    "delay_margin": "stability.delay_margin",
    "Mode": "definition.hybrid",
    "Guard": "definition.hybrid",
    "Switch": "definition.hybrid",
    "TimeEvent": "definition.hybrid",
    "HybridModel": "definition.hybrid",
    "HybridProblem": "definition.hybrid_problem",
    "simulate_hybrid": "simulation.hybrid",
    "HybridSimulation": "simulation.hybrid",
    "ContactPoint": "definition.contact",
    "ContactSystem": "definition.contact",
    "simulate_contact": "simulation.contact",
    "ContactSimulation": "simulation.contact",
    "Phase": "transcription.multiphase",
    "IntervalChain": "transcription.multiphase",
    "PointFunction": "transcription.multiphase",
    "transcribe_phases": "transcription.multiphase",
    "ChainLayout": "transcription.layout",
    "RadauBasis": "transcription.grid",
    "radau_basis": "transcription.grid",
    "Covariance": "inference.covariance",
    "constrained_covariance": "inference.covariance",
    "Cvodes": "simulation.integrators",
    "RungeKutta": "simulation.integrators",
    "Simulation": "simulation.ode",
    "simulate": "simulation.ode",
    "DDESimulation": "simulation.dde",
    "simulate_dde": "simulation.dde",
    "HermiteSimpson": "transcription.methods",
    "Radau": "transcription.methods",
    "AbstractMethod": "transcription.methods",
    "AbstractTranscription": "transcription.methods",
    "BackwardEuler": "transcription.methods",
    "Midpoint": "transcription.methods",
    "Trapezoidal": "transcription.methods",
    "Identifiability": "inference.identifiability",
    "identifiability": "inference.identifiability",
    "Result": "results.result",
    "Estimate": "results.result",
    "finalize": "results.report",
    "StochasticModel": "results.prediction",
    "predict": "results.prediction",
    "fit_verdict": "results.verdict",
    "parameter_intervals": "results.report",
    "save_figure": "results.plotting",
    "Ipopt": "solving.ipopt",
    "IterationInfo": "solving.ipopt",
    "IterationCallback": "base.callbacks",
    "solve": "solving.solve",
    "StaticOptimization": "solving.static",
    "StaticSolution": "solving.static",
    "StiffnessConstraint": "solving.static",
    "LBFGS": "shooting.optimizers",
    "ReducedIpopt": "shooting.optimizers",
    "SteepestDescent": "shooting.optimizers",
    "Adjoint": "shooting.methods",
    "Forward": "shooting.methods",
    "MultipleShooting": "shooting.methods",
    "SingleShooting": "shooting.methods",
    "Bootstrap": "studies.bootstrap",
    "bootstrap": "studies.bootstrap",
    "Profile": "studies.profile",
    "profile": "studies.profile",
    "batch": "studies.batch",
    "BatchReport": "studies.batch",
}
#: Public sub-modules, also imported on first use.
_MODULES = {"signals": "signals", "kalman": "inference.kalman"}

if _typing.TYPE_CHECKING:  # the same names, spelled out for type checkers and editors (jedi, pyright, mypy);
    # tests/unit/test_public_api_static.py checks that this block and _LAZY agree
    from . import signals as signals
    from .base.callbacks import (
        IterationCallback as IterationCallback,
    )
    from .base.files import (
        atomic_path as atomic_path,
        write_atomic as write_atomic,
    )
    from .base.versions import (
        versions as versions,
    )
    from .definition.contact import (
        ContactPoint as ContactPoint,
        ContactSystem as ContactSystem,
    )
    from .definition.contact_problem import (
        ContactProblem as ContactProblem,
    )
    from .definition.hybrid import (
        Guard as Guard,
        HybridModel as HybridModel,
        Mode as Mode,
        Switch as Switch,
        TimeEvent as TimeEvent,
    )
    from .definition.hybrid_problem import (
        HybridProblem as HybridProblem,
    )
    from .definition.model import (
        Model as Model,
    )
    from .definition.problem import (
        Problem as Problem,
    )
    from .definition.stochastic import (
        StochasticProblem as StochasticProblem,
    )
    from .definition.trial import (
        Trial as Trial,
    )
    from .inference import kalman as kalman
    from .inference.covariance import (
        Covariance as Covariance,
        constrained_covariance as constrained_covariance,
    )
    from .inference.identifiability import (
        Identifiability as Identifiability,
        identifiability as identifiability,
    )
    from .multibody.chain import (
        Body as Body,
        Chain as Chain,
        ChainEquations as ChainEquations,
        bryant as bryant,
        nrmse as nrmse,
    )
    from .results.plotting import (
        save_figure as save_figure,
    )
    from .results.prediction import (
        StochasticModel as StochasticModel,
        predict as predict,
    )
    from .results.report import (
        finalize as finalize,
        parameter_intervals as parameter_intervals,
    )
    from .results.result import (
        Estimate as Estimate,
        Result as Result,
    )
    from .results.verdict import (
        fit_verdict as fit_verdict,
    )
    from .seakeeping.files import (
        read_ship_motion as read_ship_motion,
    )
    from .seakeeping.motion import (
        MotionRAO as MotionRAO,
        SeaState as SeaState,
        ShipMotion as ShipMotion,
        jonswap as jonswap,
        ship_motion as ship_motion,
    )
    from .shooting.methods import (
        Adjoint as Adjoint,
        Forward as Forward,
        MultipleShooting as MultipleShooting,
        SingleShooting as SingleShooting,
    )
    from .shooting.optimizers import (
        LBFGS as LBFGS,
        ReducedIpopt as ReducedIpopt,
        SteepestDescent as SteepestDescent,
    )
    from .simulation.contact import (
        ContactSimulation as ContactSimulation,
        simulate_contact as simulate_contact,
    )
    from .simulation.dde import (
        DDESimulation as DDESimulation,
        simulate_dde as simulate_dde,
    )
    from .simulation.hybrid import (
        HybridSimulation as HybridSimulation,
        simulate_hybrid as simulate_hybrid,
    )
    from .simulation.integrators import (
        Cvodes as Cvodes,
        RungeKutta as RungeKutta,
    )
    from .simulation.ode import (
        Simulation as Simulation,
        simulate as simulate,
    )
    from .solving.complementarity import (
        Complementarity as Complementarity,
    )
    from .solving.ipopt import (
        Ipopt as Ipopt,
        IterationInfo as IterationInfo,
    )
    from .solving.kalman_ml import (
        KalmanML as KalmanML,
        on_one_grid as on_one_grid,
    )
    from .solving.solve import (
        solve as solve,
    )
    from .solving.static import (
        StaticOptimization as StaticOptimization,
        StaticSolution as StaticSolution,
        StiffnessConstraint as StiffnessConstraint,
    )
    from .stability.delay_margin import (
        Crossing as Crossing,
        DelayMargin as DelayMargin,
        delay_margin as delay_margin,
    )
    from .studies.batch import (
        BatchReport as BatchReport,
        batch as batch,
    )
    from .studies.bootstrap import (
        Bootstrap as Bootstrap,
        bootstrap as bootstrap,
    )
    from .studies.profile import (
        Profile as Profile,
        profile as profile,
    )
    from .studies.select import (
        ModelSelection as ModelSelection,
        flagged_implausible as flagged_implausible,
        select_model as select_model,
    )
    from .transcription.grid import (
        RadauBasis as RadauBasis,
        radau_basis as radau_basis,
    )
    from .transcription.layout import (
        ChainLayout as ChainLayout,
    )
    from .transcription.methods import (
        AbstractMethod as AbstractMethod,
        AbstractTranscription as AbstractTranscription,
        BackwardEuler as BackwardEuler,
        HermiteSimpson as HermiteSimpson,
        Midpoint as Midpoint,
        Radau as Radau,
        Trapezoidal as Trapezoidal,
    )
    from .transcription.multiphase import (
        IntervalChain as IntervalChain,
        Phase as Phase,
        PointFunction as PointFunction,
        transcribe_phases as transcribe_phases,
    )


def __getattr__(name: str):
    if name in _LAZY:
        value = getattr(_import_module(f"{__name__}.{_LAZY[name]}"), name)
    elif name in _MODULES:
        value = _import_module(f"{__name__}.{_MODULES[name]}")
    else:
        raise AttributeError(f"module 'colloc' has no attribute '{name}'")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY) | set(_MODULES))


__all__ = [
    "LBFGS",
    "AbstractMethod",
    "AbstractTranscription",
    "Adjoint",
    "BackwardEuler",
    "BatchReport",
    "Body",
    "Bootstrap",
    "Chain",
    "ChainEquations",
    "ChainLayout",
    "CollocError",
    "CollocInputError",
    "Complementarity",
    "ContactPoint",
    "ContactProblem",
    "ContactSimulation",
    "ContactSystem",
    "Covariance",
    "Crossing",
    "Cvodes",
    "DDESimulation",
    "DataError",
    "DelayMargin",
    "Estimate",
    "ExtraColumnsWarning",
    "Forward",
    "Guard",
    "HermiteSimpson",
    "HybridModel",
    "HybridProblem",
    "HybridSimulation",
    "Identifiability",
    "IntervalChain",
    "Ipopt",
    "IterationCallback",
    "IterationInfo",
    "KalmanML",
    "Midpoint",
    "Mode",
    "Model",
    "ModelError",
    "ModelSelection",
    "MotionRAO",
    "MultipleShooting",
    "OptionsError",
    "Phase",
    "PointFunction",
    "Problem",
    "ProblemError",
    "Profile",
    "Radau",
    "RadauBasis",
    "ReducedIpopt",
    "Result",
    "RungeKutta",
    "SeaState",
    "ShipMotion",
    "Simulation",
    "SingleShooting",
    "SolveFailed",
    "StaticOptimization",
    "StaticSolution",
    "SteepestDescent",
    "StiffnessConstraint",
    "StochasticModel",
    "StochasticProblem",
    "Switch",
    "TimeEvent",
    "Trapezoidal",
    "Trial",
    "atomic_path",
    "batch",
    "bootstrap",
    "bryant",
    "constrained_covariance",
    "delay_margin",
    "finalize",
    "fit_verdict",
    "flagged_implausible",
    "identifiability",
    "jonswap",
    "nrmse",
    "on_one_grid",
    "parameter_intervals",
    "predict",
    "profile",
    "radau_basis",
    "read_ship_motion",
    "save_figure",
    "select_model",
    "ship_motion",
    "simulate",
    "simulate_contact",
    "simulate_dde",
    "simulate_hybrid",
    "solve",
    "transcribe_phases",
    "versions",
    "write_atomic",
]
