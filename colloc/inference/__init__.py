"""What the data say about the parameters: the covariance of a solved NLP, identifiability
diagnostics and the exact Kalman-filter likelihood of linear-Gaussian models."""
