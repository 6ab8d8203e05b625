"""The foundation every layer may use: errors, names of CasADi functions, atomic file writes,
versions, and the IPOPT iteration callback."""
