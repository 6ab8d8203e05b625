"""Identification problems built on colloc: one module per problem.

Each module exposes ``model()``, ``problem(trials)``, ``TRUE`` (the known answer of its
synthetic case), a seeded data generator and the CSV columns it reads.  The command line
finds problems through the ``colloc.problems`` entry-point group in ``pyproject.toml``.
"""
