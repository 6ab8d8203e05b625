"""What is identified, and from what: the model (implicit dynamics, named variables with units
and scales), the trials (measured records) and the problem that pairs them; and the registry
of the problems installed (:mod:`colloc.definition.registry`: the problem protocol, checked
when a problem is looked up)."""
