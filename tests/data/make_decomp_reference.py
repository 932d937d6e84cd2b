"""Reference values of ``wp.svd3``, ``wp.qr3``, ``wp.eig3`` and ``wp.svd2`` (and of their
gradients) from NVIDIA Warp.

Run with a Python that has Warp 1.19 installed (CPU is enough)::

    python tests/data/make_decomp_reference.py > /tmp/ref.py

and paste what it prints over the block between the ``BEGIN WARP REFERENCE`` and
``END WARP REFERENCE`` markers of ``tests/stdlib/test_decomp.py``. float32 values are printed
as the shortest decimal that reads back as the same float32, float64 ones as Python's repr.

``tests/stdlib/test_decomp.py`` imports this module (without Warp) and runs the same kernels,
``kernels(weft)``, through the same ``run_*`` functions on the same ``matrices()`` and
``matrices2()``.
"""
import contextlib
import sys
import textwrap

import numpy as np


def rotations(rng, n, dim=3):
    """``n`` random rotations: of a uniform angle in 2-D, the QR factor of a normal matrix in
    3-D."""
    if dim == 2:
        t = rng.uniform(-np.pi, np.pi, n)
        c, s = np.cos(t), np.sin(t)
        return np.stack([c, -s, s, c], 1).reshape(n, 2, 2)
    q, _ = np.linalg.qr(rng.normal(size=(n, 3, 3)))
    return q * np.sign(np.linalg.det(q))[:, None, None]


def with_singular_values(rng, sv):
    """A matrix U diag(sv[k]) V^T of random rotations U and V for each row ``sv[k]``."""
    sv = np.asarray(sv, dtype=np.float64)
    n, dim = sv.shape
    return rotations(rng, n, dim) @ (sv[:, :, None] * np.swapaxes(rotations(rng, n, dim), 1, 2))


def _signed_pair(rng, dim):
    """Two normal random matrices, the first with a positive determinant, the second with a
    negative one."""
    a = rng.normal(size=(dim, dim))
    b = rng.normal(size=(dim, dim))
    if np.linalg.det(a) < 0:
        a[0] = -a[0]
    if np.linalg.det(b) > 0:
        b[0] = -b[0]
    return a, b


def matrices():
    """Four float32-exact 3x3 matrices on which Warp's float32 sweeps have converged: a random
    one, one with a negative determinant, one with singular values 1.5, 1.497, 0.4 (0.2% apart)
    and one with a negative determinant and singular values 3, 1, 0.1."""
    rng = np.random.default_rng(2025)
    a, b = _signed_pair(rng, 3)
    c = with_singular_values(rng, [[1.5, 1.497, 0.4]])[0]
    d = with_singular_values(rng, [[3.0, -1.0, 0.1]])[0]
    return np.array([a, b, c, d]).astype(np.float32)


def matrices2():
    """Six float32-exact 2x2 matrices for ``wp.svd2``: a random one, one with a negative
    determinant, one with singular values 1.5 and 1.497 (0.2% apart), a rank-1 one, 2 I
    (repeated singular values) and zero."""
    rng = np.random.default_rng(2026)
    a, b = _signed_pair(rng, 2)
    c = with_singular_values(rng, [[1.5, 1.497]])[0]
    d = np.array([[0.5, -1.0], [1.5, -3.0]])
    return np.array([a, b, c, d, 2.0 * np.eye(2), np.zeros((2, 2))]).astype(np.float32)


def kernels(wp):
    """The kernels, compiled by ``wp`` (``warp`` or ``weft``): the decompositions of 3x3 float64
    matrices (eig3 of a separate symmetric input), their float32 values with three losses to
    differentiate, and the same for svd2."""

    @wp.kernel
    def decomp64(A: wp.array(dtype=wp.mat33d), S: wp.array(dtype=wp.mat33d),
                 U: wp.array(dtype=wp.mat33d), s: wp.array(dtype=wp.vec3d),
                 V: wp.array(dtype=wp.mat33d), Q: wp.array(dtype=wp.mat33d),
                 R: wp.array(dtype=wp.mat33d), E: wp.array(dtype=wp.mat33d),
                 d: wp.array(dtype=wp.vec3d)):
        i = wp.tid()
        u = wp.mat33d()
        sg = wp.vec3d()
        v = wp.mat33d()
        wp.svd3(A[i], u, sg, v)
        U[i] = u
        s[i] = sg
        V[i] = v
        q = wp.mat33d()
        r = wp.mat33d()
        wp.qr3(A[i], q, r)
        Q[i] = q
        R[i] = r
        e = wp.mat33d()
        dd = wp.vec3d()
        wp.eig3(S[i], e, dd)
        E[i] = e
        d[i] = dd

    @wp.kernel
    def losses32(A: wp.array(dtype=wp.mat33), U: wp.array(dtype=wp.mat33),
                 s: wp.array(dtype=wp.vec3), V: wp.array(dtype=wp.mat33),
                 Q: wp.array(dtype=wp.mat33), R: wp.array(dtype=wp.mat33),
                 E: wp.array(dtype=wp.mat33), d: wp.array(dtype=wp.vec3),
                 loss: wp.array2d(dtype=float)):
        i = wp.tid()
        a = A[i]
        W = wp.mat33(0.3, -0.7, 1.1, 0.5, 0.2, -0.4, -0.9, 0.6, 0.8)
        w = wp.vec3(0.7, -0.3, 1.3)
        u = wp.mat33()
        sg = wp.vec3()
        v = wp.mat33()
        wp.svd3(a, u, sg, v)
        loss[i, 0] = (wp.ddot(W, wp.cw_mul(u, u)) + wp.dot(w, sg)
                      + wp.ddot(wp.transpose(W), wp.cw_mul(v, v)))
        q = wp.mat33()
        r = wp.mat33()
        wp.qr3(a, q, r)
        loss[i, 1] = wp.ddot(W, q) + wp.ddot(wp.transpose(W), r)
        e = wp.mat33()
        dd = wp.vec3()
        wp.eig3(a + wp.transpose(a), e, dd)
        loss[i, 2] = wp.ddot(W, wp.cw_mul(e, e)) + wp.dot(w, dd)
        U[i] = u
        s[i] = sg
        V[i] = v
        Q[i] = q
        R[i] = r
        E[i] = e
        d[i] = dd

    @wp.kernel
    def svd2_64(A: wp.array(dtype=wp.mat22d), U: wp.array(dtype=wp.mat22d),
                s: wp.array(dtype=wp.vec2d), V: wp.array(dtype=wp.mat22d)):
        i = wp.tid()
        u = wp.mat22d()
        sg = wp.vec2d()
        v = wp.mat22d()
        wp.svd2(A[i], u, sg, v)
        U[i] = u
        s[i] = sg
        V[i] = v

    @wp.kernel
    def svd2_losses32(A: wp.array(dtype=wp.mat22), U: wp.array(dtype=wp.mat22),
                      s: wp.array(dtype=wp.vec2), V: wp.array(dtype=wp.mat22),
                      loss: wp.array(dtype=float)):
        i = wp.tid()
        W = wp.mat22(0.3, -0.7, 1.1, 0.5)
        w = wp.vec2(0.7, -0.3)
        u = wp.mat22()
        sg = wp.vec2()
        v = wp.mat22()
        wp.svd2(A[i], u, sg, v)
        loss[i] = (wp.ddot(W, wp.cw_mul(u, u)) + wp.dot(w, sg)
                   + wp.ddot(wp.transpose(W), wp.cw_mul(v, v)))
        U[i] = u
        s[i] = sg
        V[i] = v

    return {"decomp64": decomp64, "losses32": losses32, "svd2_64": svd2_64,
            "svd2_losses32": svd2_losses32}


def run_decomp64(wp, kernel, A, S, requires_grad=False):
    """``kernel`` (decomp64 of ``kernels(wp)``) on the float64 matrices ``A`` and the symmetric
    ``S``: the input arrays, the output arrays (U, s, V, Q, R, E, d) and the tape."""
    n = len(A)
    ins = [wp.array(x, dtype=wp.mat33d, requires_grad=requires_grad) for x in (A, S)]
    outs = [wp.zeros(n, dtype=t, requires_grad=requires_grad)
            for t in (wp.mat33d, wp.vec3d, wp.mat33d, wp.mat33d, wp.mat33d, wp.mat33d, wp.vec3d)]
    tape = wp.Tape()
    with tape:
        wp.launch(kernel, n, inputs=ins, outputs=outs)
    return ins, outs, tape


def run_losses32(wp, kernel, A, requires_grad=False):
    """``kernel`` (losses32 of ``kernels(wp)``) on the matrices ``A`` in float32: the input
    array, the values U, s, V, Q, R, E, d (numpy), the losses and the tape."""
    n = len(A)
    a = wp.array(np.asarray(A, np.float32), dtype=wp.mat33, requires_grad=requires_grad)
    outs = [wp.zeros(n, dtype=t) for t in (wp.mat33, wp.vec3, wp.mat33, wp.mat33, wp.mat33,
                                            wp.mat33, wp.vec3)]
    loss = wp.zeros((n, 3), dtype=float, requires_grad=requires_grad)
    tape = wp.Tape()
    with tape:
        wp.launch(kernel, n, inputs=[a], outputs=outs + [loss])
    return a, [o.numpy() for o in outs], loss, tape


def run_svd2_64(wp, kernel, A, requires_grad=False):
    """``kernel`` (svd2_64 of ``kernels(wp)``) on the float64 matrices ``A``: the input array,
    the output arrays (U, s, V) and the tape."""
    n = len(A)
    a = wp.array(A, dtype=wp.mat22d, requires_grad=requires_grad)
    outs = [wp.zeros(n, dtype=t, requires_grad=requires_grad)
            for t in (wp.mat22d, wp.vec2d, wp.mat22d)]
    tape = wp.Tape()
    with tape:
        wp.launch(kernel, n, inputs=[a], outputs=outs)
    return a, outs, tape


def run_svd2_losses32(wp, kernel, A, requires_grad=False):
    """``kernel`` (svd2_losses32 of ``kernels(wp)``) on the matrices ``A`` in float32: the input
    array, the values U, s, V (numpy), the loss and the tape."""
    n = len(A)
    a = wp.array(np.asarray(A, np.float32), dtype=wp.mat22, requires_grad=requires_grad)
    outs = [wp.zeros(n, dtype=t) for t in (wp.mat22, wp.vec2, wp.mat22)]
    loss = wp.zeros(n, dtype=float, requires_grad=requires_grad)
    tape = wp.Tape()
    with tape:
        wp.launch(kernel, n, inputs=[a], outputs=outs + [loss])
    return a, [o.numpy() for o in outs], loss, tape


def _reference(wp):
    K = kernels(wp)
    out = {}
    mats = matrices()
    n = len(mats)
    a, res32, loss, tape = run_losses32(wp, K["losses32"], mats, requires_grad=True)
    A = mats.astype(np.float64)
    res64 = [o.numpy() for o in run_decomp64(wp, K["decomp64"], A, A + np.swapaxes(A, 1, 2))[1]]
    for prec, res in (("32", res32), ("64", res64)):
        U, s, V = (r.astype(np.float64) for r in res[:3])
        tol = 1e-5 if prec == "32" else 1e-13
        assert np.abs((U * s[:, None, :]) @ np.swapaxes(V, 1, 2) - A).max() < tol * 3, \
            "Warp's sweeps have not converged"
        for k, v in zip("U s V Q R E d".split(), res):
            out[k + prec] = v
    grads = []
    for k in range(3):
        seed = np.zeros((n, 3), np.float32)
        seed[:, k] = 1.0
        tape.backward(grads={loss: wp.array(seed)})
        grads.append(a.grad.numpy().copy())
        tape.zero()
    out["grad32"] = np.stack(grads, 1)   # [matrix, loss, 3, 3]

    mats = matrices2()
    _, outs, _ = run_svd2_64(wp, K["svd2_64"], mats.astype(np.float64))
    a, res32, loss, tape = run_svd2_losses32(wp, K["svd2_losses32"], mats, requires_grad=True)
    for prec, res in (("32", res32), ("64", [o.numpy() for o in outs])):
        for k, v in zip("U s V".split(), res):
            out["svd2_" + k + prec] = v
    tape.backward(grads={loss: wp.ones(len(mats), dtype=float)})
    out["svd2_grad32"] = a.grad.numpy()   # [matrix, 2, 2]
    return out


def _literal(values, prec):
    """A flat list literal, wrapped at 99 columns: float32 values as the shortest decimal that
    reads back as the same float32, float64 ones as Python's repr."""
    if prec == "32":
        items = [np.format_float_positional(np.float32(v), unique=True, trim="0")
                 for v in np.ravel(values)]
    else:
        items = [repr(float(v)) for v in np.ravel(values)]
    return "[\n" + textwrap.fill(", ".join(items) + ",", 99, initial_indent="    ",
                                 subsequent_indent="    ") + "\n]"


def main(file=sys.stdout):
    import warp as wp

    with contextlib.redirect_stdout(sys.stderr):  # Warp's start-up and module messages
        wp.init()
        wp.set_device("cpu")
        out = _reference(wp)
    p = lambda s: print(s, file=file)  # noqa: E731
    p(f"# --- BEGIN WARP REFERENCE (tests/data/make_decomp_reference.py, Warp "
      f"{wp.config.version}, CPU)")
    p("WARP = {}")
    for key, v in out.items():
        p(f"WARP[{key!r}] = np.reshape({_literal(v, key[-2:])}, {v.shape})")
    p("# --- END WARP REFERENCE")


if __name__ == "__main__":
    main()
