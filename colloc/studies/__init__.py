"""Studies made of many solves: the parametric bootstrap, likelihood profiles and the
comparison of methods from several starts."""
