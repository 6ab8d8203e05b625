"""Convert the parmest semibatch experiments (Pyomo's ``exp1.out … exp10.out``) to colloc CSV files.

    python data/semibatch/make_semibatch.py [SOURCE_DIR]

SOURCE_DIR holds the ``.out`` JSON files (default: ``../shared/data/external/parmest_semibatch``
next to the repository).  Writes ``exp1.csv … exp10.csv`` next to this script, atomically,
with the columns ``time, Fa1, Fa2, Tc1, Tc2, Ca0, Cb0, Cc0, Ca, Cb, Cc, Tr`` (rows in time order).
"""

from __future__ import annotations

import io
import sys
from pathlib import Path

import colloc as co
from colloc_problems.semibatch import INITIAL, INPUTS, SIGNALS, read_out

HERE = Path(__file__).resolve().parent


def main(source: Path) -> None:
    for i in range(1, 11):
        trial = read_out(source / f"exp{i}.out")
        buf = io.StringIO()
        cols = ["time", *INPUTS, *INITIAL, *SIGNALS]
        buf.write(",".join(cols) + "\n")
        for k, t in enumerate(trial.time):
            buf.write(",".join([repr(float(t))] + [repr(float(trial[c][k])) for c in cols[1:]]) + "\n")
        co.write_atomic(HERE / f"exp{i}.csv", buf.getvalue())
    print(f"wrote exp1.csv … exp10.csv to {HERE}")


if __name__ == "__main__":
    default = HERE.parents[2] / "shared" / "data" / "external" / "parmest_semibatch"
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else default)
