"""Stability of delayed linear feedback: the delay margin."""
