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

These are analyses, not identification problems, so they are not registered in the
``colloc.problems`` entry-point group.
"""
