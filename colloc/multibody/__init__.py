"""Spatial open-chain (tree) multibody dynamics on a prescribed 6-DoF base, as CasADi expressions."""
