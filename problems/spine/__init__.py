"""Franklin (2006) reflexive spine model: stability and delay-margin analyses.

T. C. Franklin (2006), *Linear system analyses of the role of reflex gain and delay in a
dynamic human spine model*, M.S. thesis, Virginia Tech.  Data: ``data/spine`` (copied from
the project's thesis extraction; see its README).

Modules
-------
one_dof
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
