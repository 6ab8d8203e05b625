"""Forward simulation: integrators, ODE simulation (CVODES) and the method of steps for delays."""
