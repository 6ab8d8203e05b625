"""The free-simulation check on the twelve shipped BDS trials (PID, the default sway noise,
the whole 60 s record): how often the record's RMS, mean speed and mean power frequency lie
inside their 95 % predictive intervals over 200 free simulations of the fitted model, and how
many of the ten spectrum bands lie inside the draws' envelope.

    python benchmarks/real_sway_free_simulation.py [--noise sway|sway-held|sway-lp]

Each fit is the README's command (``colloc identify cip ... --height --mass [--noise NOISE]``) in
its own process.  It reports, it never asserts.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STATS = ("rms", "mean_speed", "mean_power_frequency")


def subjects() -> dict[str, dict[str, str]]:
    rows = (ROOT / "data/bds/BDSinfoCOP_subset.txt").read_text().splitlines()
    head = rows[0].split("\t")
    return {cells["Trial"]: cells for cells in (dict(zip(head, line.split("\t"))) for line in rows[1:])}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--noise", default=None, help="cip.NOISE_MODELS (default: the CLI's, sway for a real subject)")
    args = ap.parse_args(argv)
    info = subjects()
    rows = []
    for path in sorted((ROOT / "data/bds").glob("BDS*.txt.gz")):
        name = path.name.split(".")[0]
        height, mass = float(info[name]["Height"]) / 100.0, float(info[name]["Weight"])
        out = Path(tempfile.mkdtemp()) / "result.json"
        subprocess.run([sys.executable, "-m", "colloc.cli", "identify", "cip", "--data", str(path),
                        "--column", "cop=COPx", "--height", f"{height}", "--mass", f"{mass}", "--out", str(out),
                        *(["--noise", args.noise] if args.noise else [])],
                       capture_output=True, check=False)
        doc = json.loads(out.read_text())
        check = doc["info"]["free_simulation"]["outputs"]["cop"]
        rows.append({"trial": name, "status": doc["status"], **{s: check[s]["inside"] for s in STATS},
                     "bands_inside": check["spectrum"]["bands_inside"]})
        print(rows[-1], flush=True)
    bands = sorted(r["bands_inside"] for r in rows)
    print("inside their 95 % predictive interval: "
          + ", ".join(f"{s} {sum(r[s] for r in rows)} of {len(rows)}" for s in STATS)
          + f"; spectrum bands inside: median {bands[len(bands) // 2]} of 10 (range {bands[0]}–{bands[-1]})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
