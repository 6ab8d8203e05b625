"""Franklin (2006) 18-DoF spine: the equations of motion, muscles, discs and load (CasADi).

Builds the symbolic model described in :mod:`colloc_problems.spine.model` (kinematics,
Lagrange's equations, polyline muscles with the reflexive force law, discs, external load and
the right-hand side) from the anatomy of :mod:`colloc_problems.spine.anatomy`.

References
----------
T. C. Franklin (2006), *Linear system analyses of the role of reflex gain and delay in a
dynamic human spine model*, M.S. thesis, Virginia Tech (advisor K. P. Granata).
"""

from __future__ import annotations

import casadi as ca
import numpy as np

from colloc_problems.spine.anatomy import BODIES, N_DOF, N_STATES, PARAMETER_NAMES, load_muscles, load_parameters
from colloc_problems.spine.kinematics import _R1, _body_to_inertial, _phi_over_sin, _skew, _vee

__all__ = ["build_fields"]


def build_fields(options: tuple) -> dict:
    """The fields of :class:`colloc_problems.spine.model.SpineModel` for the options of
    :func:`colloc_problems.spine.model.build_model` (a tuple of ``(name, value)`` pairs): the
    symbolic model, derived by CasADi AD as the docstring of :mod:`colloc_problems.spine.model`
    describes."""
    opts = dict(options)
    par = load_parameters(thorax_length=opts["thorax_length"], load_height_m=opts["load_height_m"],
                          load_anterior_m=opts["load_anterior_m"])
    muscles = load_muscles(parsl2_path=opts["parsl2_path"])
    nm = len(muscles)

    q = ca.SX.sym("q", N_DOF)
    qd = ca.SX.sym("qd", N_DOF)

    # ---- kinematics (Appendix A.i)
    Cp = ca.DM(_body_to_inertial(par.pelvis_angle, 0.0, 0.0))
    rot = [_body_to_inertial(q[3 * j], q[3 * j + 1], q[3 * j + 2]) for j in range(6)]
    origins, coms = [], []
    o = Cp @ ca.DM([0.0, 0.0, par.cent3])
    for j in range(6):
        origins.append(o)
        coms.append(o + par.lengths[j] / 2 * rot[j][:, 2])
        o = o + par.lengths[j] * rot[j][:, 2]
    head = o  # top of the thorax (not used by the dynamics)
    frame = {"pelvis": (ca.DM.zeros(3), Cp)}
    for j, b in enumerate(BODIES):
        frame[b] = (origins[j], rot[j])

    omega = []  # inertial-frame angular velocities, [ω×] = Ċ Cᵀ
    for j in range(6):
        Cdot = ca.reshape(ca.jtimes(ca.vec(rot[j]), q, qd), 3, 3)
        omega.append(_vee(Cdot @ rot[j].T))

    # ---- energies (eqs. 3.B.i.2-3) and Lagrange's equations (eq. 3.B.i.4), all by AD
    T = 0
    V = 0
    for j in range(6):
        m, L = par.masses[j], par.lengths[j]
        inertia = ca.diag(ca.DM([m * (par.lb**2 / 4 + L**2 / 12), m * (par.la**2 / 4 + L**2 / 12),
                                 m * (par.la**2 + par.lb**2) / 4]))
        vG = ca.jtimes(coms[j], q, qd)
        wb = rot[j].T @ omega[j]
        T = T + 0.5 * m * ca.dot(vG, vG) + 0.5 * ca.dot(wb, inertia @ wb)
        V = V + par.gravity * m * coms[j][2]
    M, dTdqd = ca.hessian(T, qd)
    bias = ca.jtimes(dTdqd, q, qd) - ca.gradient(T, q) + ca.gradient(V, q)

    # ---- muscle lengths and their Jacobian (polyline through the via points)
    lengths = []
    for mus in muscles:
        pos = [frame[b][0] + frame[b][1] @ ca.DM(c) for b, c in zip(mus.bodies, mus.coords)]
        lengths.append(sum(ca.norm_2(pos[i + 1] - pos[i]) for i in range(len(pos) - 1)))
    Lvec = ca.vertcat(*lengths)
    JL = ca.jacobian(Lvec, q)
    f_len = ca.Function("lengths", [q], [Lvec, JL], ["q"], ["L", "dL_dq"])

    # ---- intervertebral discs (§3.A.ii)
    Kp, Kt = par.disc_stiffness_planar, par.disc_stiffness_twist
    Bp, Bt = par.disc_damping_planar, par.disc_damping_twist
    disc_frames = [Cp @ ca.DM(_R1(par.pelvis_angle))] + [rot[j] @ ca.DM(_R1(par.lordosis[j])) for j in range(6)]
    Jw = [ca.jacobian(w, qd) for w in omega]
    Q_disc = ca.SX.zeros(N_DOF)
    angles = []
    for j in range(6):  # disc between body j-1 (j = 0: pelvis) and body j
        El, Eu = disc_frames[j], disc_frames[j + 1]
        nl, nu = El[:, 2], Eu[:, 2]
        v = ca.cross(nl, nu)
        c = ca.dot(nl, nu)
        planar = v * _phi_over_sin(ca.dot(v, v), c)  # φ k̂
        S = _skew(v)
        Rpl = ca.SX.eye(3) + S + S @ S / (1 + c)  # Rodrigues: rotation by φ about k̂
        d1, u1 = Rpl @ El[:, 0], Eu[:, 0]
        twist = ca.atan2(ca.dot(nu, ca.cross(d1, u1)), ca.dot(d1, u1))
        moment = -(Kp * planar + Bp * ca.jtimes(planar, q, qd)) - (Kt * twist + Bt * ca.jtimes(twist, q, qd)) * nu
        Q_disc += Jw[j].T @ moment
        if j > 0:
            Q_disc -= Jw[j - 1].T @ moment
        angles.append(ca.vertcat(planar, twist))

    # ---- external load: vertical, fixed to the thorax at (0, anterior, height)
    load_point = origins[5] + rot[5] @ ca.DM([0.0, par.load_anterior_m, par.load_height_m])
    dz_load = ca.jacobian(load_point[2], q).T

    f_kin = ca.Function("kinematics", [q], [ca.horzcat(*origins, head), ca.horzcat(*coms), load_point],
                        ["q"], ["origins", "coms", "load_point"])
    f_T = ca.Function("kinetic", [q, qd], [T], ["q", "qd"], ["T"])
    f_V = ca.Function("potential", [q], [V], ["q"], ["V"])
    f_M = ca.Function("mass_matrix", [q], [M], ["q"], ["M"])
    f_h = ca.Function("bias", [q, qd], [bias], ["q", "qd"], ["h"])
    f_w = ca.Function("angular_velocity", [q, qd], [ca.horzcat(*omega)], ["q", "qd"], ["omega"])
    f_disc_angles = ca.Function("disc_angles", [q], [ca.horzcat(*angles)], ["q"], ["angles"])
    f_disc = ca.Function("disc_force", [q, qd], [Q_disc], ["q", "qd"], ["Q"])

    # ---- rest lengths, maximum forces, muscle masses
    q0 = np.zeros(N_DOF)
    q0[0::3] = par.lordosis
    L0 = np.asarray(f_len(q0)[0], dtype=float).ravel()
    csa_m2 = np.array([m.csa_cm2 for m in muscles]) * 1e-4
    f0 = par.max_stress * csa_m2
    mass = par.density * csa_m2 * L0

    # ---- generalized force Q − h with the reflexive muscle model (eqs. 3.A.iii.3, 3.B.iv.3)
    x = ca.SX.sym("x", N_STATES)
    xd = ca.SX.sym("x_d", N_STATES)
    alpha = ca.SX.sym("alpha", nm)
    p = ca.SX.sym("p", len(PARAMETER_NAMES))
    qq, vv = x[:N_DOF], x[N_DOF:]
    L, dL = f_len(qq)
    Ld, dLd = f_len(xd[:N_DOF])
    L0dm = ca.DM(L0)
    strain, rate = (L - L0dm) / L0dm, (dL @ vv) / L0dm
    strain_d, rate_d = (Ld - L0dm) / L0dm, (dLd @ xd[N_DOF:]) / L0dm
    fa = ca.DM(f0) * alpha
    force = fa * (1 + p[0] * strain + p[1] * rate) + fa * (p[2] * strain_d + p[3] * rate_d)
    Q = -dL.T @ force + f_disc(qq, vv) - p[4] * ca.substitute(dz_load, q, qq) - f_h(qq, vv)
    f_Q = ca.Function("generalized_force", [x, xd, alpha, p], [Q], ["x", "x_d", "alpha", "p"], ["Q_minus_h"])
    f_force = ca.Function("muscle_force", [x, xd, alpha, p], [force], ["x", "x_d", "alpha", "p"], ["f"])

    # ---- right-hand side ẋ = F(x, x_d, α, p): q̈ = M⁻¹ (Q − h) by an MX linear solve
    X = ca.MX.sym("x", N_STATES)
    XD = ca.MX.sym("x_d", N_STATES)
    A = ca.MX.sym("alpha", nm)
    P = ca.MX.sym("p", len(PARAMETER_NAMES))
    qdd = ca.solve(f_M(X[:N_DOF]), f_Q(X, XD, A, P))
    f_rhs = ca.Function("spine_rhs", [X, XD, A, P], [ca.vertcat(X[N_DOF:], qdd)], ["x", "x_d", "alpha", "p"], ["xdot"])

    functions = {"kinetic": f_T, "potential": f_V, "mass_matrix": f_M, "bias": f_h, "lengths": f_len,
                 "points": f_kin, "angular_velocity": f_w, "disc_angles": f_disc_angles, "disc_force": f_disc,
                 "generalized_force": f_Q, "muscle_force": f_force, "rhs": f_rhs}
    return {"parameters": par, "muscles": muscles, "q0": q0, "rest_length": L0, "max_force": f0,
            "muscle_mass": mass, "functions": functions, "options": opts}
