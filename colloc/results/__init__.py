"""Results of an identification (numbers only, no symbols) and their plots."""
