"""Franklin (2006) reflexive spine model: stability and delay-margin analyses.

T. C. Franklin (2006), *Linear system analyses of the role of reflex gain and delay in a
dynamic human spine model*, M.S. thesis, Virginia Tech.  Data: ``data/spine`` (copied from
the project's thesis extraction; see its README).

Modules
-------
anatomy, kinematics, equations, linear, model
    The 18-DoF model: body constants and muscle paths read from ``data/spine``, rotations,
    the CasADi equations of motion, their linearization; ``model`` gathers them
    (``build_model``, ``linearization``, ``affine_jacobians``).

activations, stability
    The static optimisations of the activations (equilibrium, stiffness at zero delay,
    metabolic power) stated for :class:`colloc.StaticOptimization`, and the analysis behind
    ``colloc spine stability`` (co-contraction, delay margin).

sweeps, sensitivity, figures, experiments
    The experiments of chapters 4–5 (Table 5.1, Figs 4.5–4.9, 5.2–5.3) and their figures;
    ``python -m colloc_problems.spine.experiments``.

one_dof (one_dof_data, one_dof_model, one_dof_dde)
    The §3.D one-degree-of-freedom inverted pendulum with two reflexive muscles: J_i, J_d
    by CasADi automatic differentiation, delay margin, nonlinear DDE simulation and the
    state-space slope of Table 3.D.1.

command
    The ``colloc spine`` command line, plugged into ``colloc`` through the ``colloc.commands``
    entry-point group.

These are analyses, not identification problems, so they are not registered in the
``colloc.problems`` entry-point group.
"""

#: Intrinsic damping gain b (s) used when none is given: the middle of the thesis' values 0.2, 2,
#: 20.  It lives in the package, which imports nothing, so that the light command line
#: (``command``) and the model (``stability``) both read it without importing each other.
DEFAULT_DAMPING = 2.0
