"""What is identified, and from what: the model (implicit dynamics, named variables with units
and scales), the trials (measured records) and the problem that pairs them."""
