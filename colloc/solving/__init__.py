"""``solve(problem, method)``: the one entry point, IPOPT's settings and the collocation path."""
