"""How a problem becomes an NLP: the transcription methods, the grid, the interpolation of values
between nodes and samples, and the structure-exploiting assembly."""
