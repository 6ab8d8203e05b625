"""The result document's text: long arrays on one line, the same JSON value as the standard
library's indenting encoder writes."""

from __future__ import annotations

import json

import numpy as np

from colloc.base.files import COMPACT_ABOVE, dumps_compact_arrays, json_safe


def _document():
    rng = np.random.default_rng(3)
    x = rng.standard_normal(500) * 10.0 ** rng.integers(-300, 300, 500)
    x[[7, 99]] = [np.nan, np.inf]
    return json_safe({
        "parameters": {"k": 1.5, "c": -2e-12},
        "timings": {"solve_s": 0.25},
        "warnings": [{"code": "a", "values": list(range(COMPACT_ABOVE + 5))}],
        "short": [1.0, 2.0],
        "trajectories": {"trial x": {"time": np.linspace(0, 5, 501), "x": x}},
        "mixed": [1.0, "a", {"b": [None] * 40}, None] * 10,
        "matrix": rng.standard_normal((30, 30)),
        "flags": [True, False] * 20,
    })


def test_a_string_like_a_placeholder_is_kept():
    doc = {"text": "\u0000" + "0" + "\u0000", "x": list(np.linspace(0.0, 1.0, 50))}
    assert json.loads(dumps_compact_arrays(doc)) == doc


def test_the_same_value_as_the_standard_encoder():
    doc = _document()
    text = dumps_compact_arrays(doc)
    assert json.loads(text) == json.loads(json.dumps(doc, indent=1, allow_nan=False)) == doc
    assert json.loads(text)["trajectories"]["trial x"]["x"][7] is None  # NaN → null
    assert dumps_compact_arrays(doc, indent=None) == json.dumps(doc, allow_nan=False)


def test_long_arrays_take_one_line_and_the_rest_stays_indented():
    text = dumps_compact_arrays(_document())
    lines = text.splitlines()
    # one line per key/bracket for the small parts, never a line per array element
    lone = [line.strip() for line in lines if line.strip().rstrip(",").replace(".", "").replace("-", "").isdigit()]
    assert lone == ["1.0,", "2.0"]  # the short list's elements only
    assert any(line.strip().startswith('"time": [0.0, 0.01,') for line in lines)
    assert '\n "parameters": {\n  "k": 1.5,' in text
    assert '"short": [\n  1.0,\n  2.0\n ]' in text
