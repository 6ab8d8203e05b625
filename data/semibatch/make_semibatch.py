"""Convert the parmest semibatch experiments (Pyomo's ``exp1.out … exp10.out``) to colloc CSV files.

    python data/semibatch/make_semibatch.py [SOURCE_DIR]

SOURCE_DIR holds the ``.out`` JSON files (default: ``../shared/data/external/parmest_semibatch``
next to the repository).  Writes ``exp<i>.csv`` next to this script, atomically, with the
columns ``time, Fa1, Fa2, Tc1, Tc2, Ca0, Cb0, Cc0, Ca, Cb, Cc, Tr`` (rows in time order).  An
experiment whose file would repeat an earlier one's is not written: the source's ``exp9.out``
holds the same conditions and measurements as ``exp7.out`` (only its ``experiment`` number
differs), and the same record fitted twice is not two experiments.
"""

from __future__ import annotations

import io
import sys
from pathlib import Path

import colloc as co
from colloc_problems.semibatch import INITIAL, INPUTS, SIGNALS, read_out

HERE = Path(__file__).resolve().parent


def main(source: Path) -> None:
    written: dict[str, str] = {}  # CSV text -> the file that holds it
    for i in range(1, 11):
        trial = read_out(source / f"exp{i}.out")
        buf = io.StringIO()
        cols = ["time", *INPUTS, *INITIAL, *SIGNALS]
        buf.write(",".join(cols) + "\n")
        for k, t in enumerate(trial.time):
            buf.write(",".join([repr(float(t))] + [repr(float(trial[c][k])) for c in cols[1:]]) + "\n")
        text = buf.getvalue()
        if text in written:
            print(f"exp{i}.out repeats {written[text]}'s record: not written")
            continue
        written[text] = f"exp{i}.csv"
        co.write_atomic(HERE / f"exp{i}.csv", text)
    print(f"wrote {', '.join(written.values())} to {HERE}")


if __name__ == "__main__":
    default = HERE.parents[2] / "shared" / "data" / "external" / "parmest_semibatch"
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else default)
