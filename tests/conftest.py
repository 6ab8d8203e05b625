"""Shared fixtures: seeded data, a headless matplotlib, strict numerics."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

os.environ.setdefault("MPLBACKEND", "Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from colloc_problems import pendulum  # noqa: E402


def pytest_collection_modifyitems(config, items):
    """``@pytest.mark.needs_compiler``: skipped where the library finds no C compiler."""
    from colloc.base.compiler import has_compiler

    if has_compiler():
        return
    skip = pytest.mark.skip(reason="needs a C compiler")
    for item in items:
        if item.get_closest_marker("needs_compiler") is not None:
            item.add_marker(skip)


@pytest.fixture
def covariance_route(monkeypatch):
    """``covariance_route(name)``: the covariance's KKT solve takes the LDLᵀ route ``name``
    ("ordered": colloc.inference.ldl, skipped without a compiler; "qdldl", skipped without
    it; "casadi-ldl").  Returns the list of the ordered route's factorisations made."""
    from colloc.inference import covariance

    def use(route: str) -> list:
        used: list = []
        if route == "ordered":
            from colloc.base.compiler import has_compiler
            if not has_compiler():
                pytest.skip("no C compiler")
            ordered = covariance._ordered_factor
            monkeypatch.setattr(covariance, "_ordered_factor", lambda K, A: used.append(ordered(K, A)) or used[-1])
        else:
            monkeypatch.setattr(covariance, "_ordered_factor", lambda K, A: None)
        if route == "qdldl":
            pytest.importorskip("qdldl")
        elif route == "casadi-ldl":
            monkeypatch.setattr(covariance, "_qdldl_factor", lambda K: None)
        return used

    return use


@pytest.fixture(autouse=True)
def _strict_numerics():
    old = np.seterr(divide="raise", over="raise", invalid="raise")
    yield
    np.seterr(**old)


@pytest.fixture(scope="session")
def clean_pendulum_trial():
    """4 s of noise-free pendulum data at 100 Hz (p = 10)."""
    return pendulum.simulate_trial(duration=4.0, noise_std=0.0, name="clean.csv")


@pytest.fixture(scope="session")
def noisy_pendulum_trial():
    """10 s of pendulum data at 100 Hz with σ = 0.05 rad (seed 1)."""
    return pendulum.simulate_trial(noise_std=0.05, seed=1, name="noisy.csv")


def _fes_brute_force(time, pulse, alpha, p, substeps=100):
    """`fes-muscle` force written apart from the library, straight from the contract (§2): the
    calcium clock u(t) from its definition, eqs. (8)–(10) solved for ε̇_c by trying both signs,
    classical RK4 with ``substeps`` steps per sample (1e-5 s at 1 kHz; the clock's switching
    times lie on that grid, so each step sees one branch of u, evaluated by that branch's own
    formula at the step's three RK4 times).  α is constant over each sample interval (its value
    at the interval's start)."""
    time = np.asarray(time, dtype=float)
    alpha = np.broadcast_to(np.asarray(alpha, dtype=float), time.shape)
    starts = time[np.asarray(pulse) == 1] + p["tau"]
    h = (time[1] - time[0]) / substeps
    t0 = time[0] + h * np.arange((len(time) - 1) * substeps)
    mid = t0 + 0.5 * h
    k = np.searchsorted(starts, mid, side="right") - 1  # the cycle holding each step's middle
    s0 = t0 - starts[np.maximum(k, 0)]  # time since that cycle began, at the step's start
    smid = s0 + 0.5 * h
    plateau = (k >= 0) & (smid < p["tau1"])
    fall = (k >= 0) & ~plateau & (smid < p["tau1"] + p["tau2"])
    u = np.empty((len(t0), 3))
    for j, c in enumerate((0.0, 0.5, 1.0)):
        s = s0 + c * h
        u[:, j] = np.where(plateau, p["U_p"], np.where(fall, p["U_p"] * (1 - (s - p["tau1"]) / p["tau2"]), p["U_m"]))

    def f(y, u_, a):
        kc, F = y
        up, ua = max(u_, 0.0), abs(u_)
        for sgn in (-1.0, 1.0):  # shortening (ε̇_c ≤ 0) or lengthening: the sign that is consistent
            d = -(a * p["F0"] * up - ua * F) / ((p["k_s"] + kc) * p["L_c0"] - sgn * F)
            if d * sgn >= 0:
                break
        return np.array([-(ua + abs(d)) * kc + a * p["k0"] * up, -p["k_s"] * p["L_c0"] * d])

    y, out = np.zeros(2), [0.0]
    for i in range(len(time) - 1):
        a = float(alpha[i])
        for n in range(i * substeps, (i + 1) * substeps):
            ua, um, ub = u[n]
            k1 = f(y, ua, a)
            k2 = f(y + 0.5 * h * k1, um, a)
            k3 = f(y + 0.5 * h * k2, um, a)
            k4 = f(y + h * k3, ub, a)
            y = y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        out.append(y[1])
    return np.array(out)


@pytest.fixture(scope="session")
def fes_brute_force():
    """An independent generator of `fes-muscle` force (brute-force RK4, see above)."""
    return _fes_brute_force


#: The documentation build of the test run (tests/test_docs.py, tests/test_notebooks.py,
#: tests/test_docs_browser.py): the one command of docs/contributing.md, into docs/_build/html.
REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
DOCS_BUILD = DOCS / "_build"
#: The build command of the README and docs/contributing.md (tests/test_readme.py checks both).
DOCS_COMMAND = "python -m sphinx -W --keep-going -n -b html docs docs/_build/html"


@dataclass(frozen=True)
class DocsBuild:
    """The site built once for the test run: its return code, its output, where it is."""

    returncode: int
    log: str
    html: Path
    executed: Path  # MyST-NB's executed notebooks, by document name (examples/pendulum.ipynb)

    def failure(self) -> str:
        """The build's last lines, for a failed assertion's message."""
        return f"docs build exited {self.returncode}:\n" + "\n".join(self.log.splitlines()[-40:])


@pytest.fixture(scope="session")
def built_docs() -> DocsBuild:
    """Build the documentation site once per test run, executing every notebook (quick mode).

    The notebooks are executed only here: the notebook tests read the executed copies.  The
    docs tests share the xdist group ``docs`` (``--dist loadgroup``), so one worker builds
    while the other runs the rest of the suite; a lock file and a stamp of the run's id keep
    the build single even when the tests are spread otherwise.
    """
    DOCS_BUILD.mkdir(parents=True, exist_ok=True)
    run_id = os.environ.get("PYTEST_XDIST_TESTRUNUID", f"pid-{os.getpid()}")
    stamp, log_file = DOCS_BUILD / "test-run.json", DOCS_BUILD / "test-build.log"
    with open(DOCS_BUILD / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            done = json.loads(stamp.read_text()) if stamp.exists() else {}
            if done.get("run") != run_id:
                env = dict(os.environ, COLLOC_QUICK="1", PYTHONWARNINGS="")
                env.pop("MPLBACKEND", None)  # the kernels choose the inline backend, as a fresh Jupyter's
                stamp.unlink(missing_ok=True)
                for old in ("html", "jupyter_execute"):  # a fresh build: every page read, every notebook run
                    shutil.rmtree(DOCS_BUILD / old, ignore_errors=True)
                argv = DOCS_COMMAND.split()
                proc = subprocess.run([sys.executable, *argv[1:]], check=False, capture_output=True, text=True, env=env,
                                      cwd=REPO)
                log_file.write_text(proc.stdout + proc.stderr)
                stamp.write_text(json.dumps({"run": run_id, "returncode": proc.returncode}))
            done = json.loads(stamp.read_text())
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    return DocsBuild(done["returncode"], log_file.read_text(), DOCS_BUILD / "html", DOCS_BUILD / "jupyter_execute")
