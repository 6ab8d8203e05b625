"""Exceptions and warnings raised by colloc.

Every error a user can cause derives from :class:`CollocInputError` (bad data, bad model
declaration, bad problem set-up, bad options).  The command line maps these to exit code 2
and prints their message on one line; anything else is a bug.
"""

from __future__ import annotations

__all__ = [
    "CollocError",
    "CollocInputError",
    "DataError",
    "ExtraColumnsWarning",
    "ModelError",
    "OptionsError",
    "ProblemError",
    "SolveFailed",
]


class CollocError(Exception):
    """Base class of every exception raised on purpose by colloc."""


class CollocInputError(CollocError, ValueError):
    """The user's input (data, model, problem or options) is invalid."""


class DataError(CollocInputError):
    """A measured trial (file, DataFrame or arrays) is malformed.

    The message names the file (or trial), the column and the row.
    """


class ModelError(CollocInputError):
    """A model declaration is inconsistent (duplicate names, bad bounds, bad shapes...)."""


class ProblemError(CollocInputError):
    """Model, trials, weights and constraints do not fit together."""


class OptionsError(CollocInputError):
    """An option object was given an invalid value."""


class SolveFailed(CollocError):
    """The solver ran but did not succeed.

    Raised by :func:`colloc.solve` when ``throw=True``; the failed, still inspectable
    result (last iterate, worst constraint violations by name) is attached as ``.result``.
    """

    def __init__(self, message: str, result: object) -> None:
        super().__init__(message)
        self.result = result


class ExtraColumnsWarning(UserWarning):
    """A data file has columns the problem does not use; they are ignored."""
