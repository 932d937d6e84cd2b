"""Reference values of ``wp.svd3``, ``wp.qr3``, ``wp.eig3`` and ``wp.svd2`` (and of their
gradients) from NVIDIA Warp.

Run with a Python that has Warp 1.19 installed (CPU is enough)::

    python tests/data/make_decomp_reference.py > /tmp/ref.py

and paste what it prints over the block between the ``BEGIN WARP REFERENCE`` and
``END WARP REFERENCE`` markers of ``tests/stdlib/test_decomp.py``. float32 values are printed
as the shortest decimal that reads back as the same float32, float64 ones as Python's repr.

``tests/stdlib/test_decomp.py`` imports ``matrices`` and ``matrices2`` from here (without Warp);
its kernels ``losses32`` and ``svd2_losses32`` must compute the same losses as ``_kernels`` and
``_kernels2`` below.
"""
import contextlib
import sys
import textwrap

import numpy as np

try:
    import warp as wp
except ImportError:  # the tests import matrices() from here without Warp
    wp = None


def _rotation(rng):
    q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    return q * np.sign(np.linalg.det(q))


def matrices():
    """Four float32-exact 3x3 matrices on which Warp's float32 sweeps have converged: a random
    one, one with a negative determinant, one with singular values 1.5, 1.497, 0.4 (0.2% apart)
    and one with a negative determinant and singular values 3, 1, 0.1."""
    rng = np.random.default_rng(2025)
    a = rng.normal(size=(3, 3))
    b = rng.normal(size=(3, 3))
    if np.linalg.det(a) < 0:
        a[0] = -a[0]
    if np.linalg.det(b) > 0:
        b[0] = -b[0]
    c = _rotation(rng) @ np.diag([1.5, 1.497, 0.4]) @ _rotation(rng).T
    d = _rotation(rng) @ np.diag([3.0, -1.0, 0.1]) @ _rotation(rng).T
    return np.array([a, b, c, d]).astype(np.float32)


def _rotation2(rng):
    t = rng.uniform(-np.pi, np.pi)
    return np.array([[np.cos(t), -np.sin(t)], [np.sin(t), np.cos(t)]])


def matrices2():
    """Six float32-exact 2x2 matrices for ``wp.svd2``: a random one, one with a negative
    determinant, one with singular values 1.5 and 1.497 (0.2% apart), a rank-1 one, 2 I
    (repeated singular values) and zero."""
    rng = np.random.default_rng(2026)
    a = rng.normal(size=(2, 2))
    b = rng.normal(size=(2, 2))
    if np.linalg.det(a) < 0:
        a[0] = -a[0]
    if np.linalg.det(b) > 0:
        b[0] = -b[0]
    c = _rotation2(rng) @ np.diag([1.5, 1.497]) @ _rotation2(rng).T
    d = np.array([[0.5, -1.0], [1.5, -3.0]])
    return np.array([a, b, c, d, 2.0 * np.eye(2), np.zeros((2, 2))]).astype(np.float32)


def _kernels():
    @wp.kernel
    def decomp32(A: wp.array(dtype=wp.mat33), U: wp.array(dtype=wp.mat33),
                 s: wp.array(dtype=wp.vec3), V: wp.array(dtype=wp.mat33),
                 Q: wp.array(dtype=wp.mat33), R: wp.array(dtype=wp.mat33),
                 E: wp.array(dtype=wp.mat33), d: wp.array(dtype=wp.vec3)):
        i = wp.tid()
        u = wp.mat33()
        sg = wp.vec3()
        v = wp.mat33()
        wp.svd3(A[i], u, sg, v)
        U[i] = u
        s[i] = sg
        V[i] = v
        q = wp.mat33()
        r = wp.mat33()
        wp.qr3(A[i], q, r)
        Q[i] = q
        R[i] = r
        e = wp.mat33()
        dd = wp.vec3()
        wp.eig3(A[i] + wp.transpose(A[i]), e, dd)
        E[i] = e
        d[i] = dd

    @wp.kernel
    def decomp64(A: wp.array(dtype=wp.mat33d), U: wp.array(dtype=wp.mat33d),
                 s: wp.array(dtype=wp.vec3d), V: wp.array(dtype=wp.mat33d),
                 Q: wp.array(dtype=wp.mat33d), R: wp.array(dtype=wp.mat33d),
                 E: wp.array(dtype=wp.mat33d), d: wp.array(dtype=wp.vec3d)):
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
        wp.eig3(A[i] + wp.transpose(A[i]), e, dd)
        E[i] = e
        d[i] = dd

    @wp.kernel
    def losses32(A: wp.array(dtype=wp.mat33), loss: wp.array2d(dtype=float)):
        # the same as losses32 in tests/stdlib/test_decomp.py
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
        d = wp.vec3()
        wp.eig3(a + wp.transpose(a), e, d)
        loss[i, 2] = wp.ddot(W, wp.cw_mul(e, e)) + wp.dot(w, d)

    return decomp32, decomp64, losses32


def _kernels2():
    @wp.kernel
    def svd2_32(A: wp.array(dtype=wp.mat22), U: wp.array(dtype=wp.mat22),
                s: wp.array(dtype=wp.vec2), V: wp.array(dtype=wp.mat22)):
        i = wp.tid()
        u = wp.mat22()
        sg = wp.vec2()
        v = wp.mat22()
        wp.svd2(A[i], u, sg, v)
        U[i] = u
        s[i] = sg
        V[i] = v

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
    def svd2_losses32(A: wp.array(dtype=wp.mat22), loss: wp.array(dtype=float)):
        # the same as svd2_losses32 in tests/stdlib/test_decomp.py
        i = wp.tid()
        W = wp.mat22(0.3, -0.7, 1.1, 0.5)
        w = wp.vec2(0.7, -0.3)
        u = wp.mat22()
        sg = wp.vec2()
        v = wp.mat22()
        wp.svd2(A[i], u, sg, v)
        loss[i] = (wp.ddot(W, wp.cw_mul(u, u)) + wp.dot(w, sg)
                   + wp.ddot(wp.transpose(W), wp.cw_mul(v, v)))

    return svd2_32, svd2_64, svd2_losses32


def _reference2():
    svd2_32, svd2_64, svd2_losses32 = _kernels2()
    mats = matrices2()
    n = len(mats)
    out = {}
    for prec, M, Vec, kernel in (("32", wp.mat22, wp.vec2, svd2_32),
                                 ("64", wp.mat22d, wp.vec2d, svd2_64)):
        res = [wp.zeros(n, dtype=t) for t in (M, Vec, M)]
        wp.launch(kernel, n, inputs=[wp.array(mats.astype(np.float64), dtype=M)], outputs=res,
                  device="cpu")
        for k, r in zip("U s V".split(), res):
            out["svd2_" + k + prec] = r.numpy()
    A = wp.array(mats, dtype=wp.mat22, requires_grad=True, device="cpu")
    loss = wp.zeros(n, dtype=float, requires_grad=True, device="cpu")
    tape = wp.Tape()
    with tape:
        wp.launch(svd2_losses32, n, inputs=[A], outputs=[loss], device="cpu")
    tape.backward(grads={loss: wp.ones(n, dtype=float, device="cpu")})
    out["svd2_grad32"] = A.grad.numpy()   # [matrix, 2, 2]
    return out


def _reference():
    decomp32, decomp64, losses32 = _kernels()
    mats = matrices()
    n = len(mats)
    out = {}
    for prec, M, Vec, decomp in (("32", wp.mat33, wp.vec3, decomp32),
                                 ("64", wp.mat33d, wp.vec3d, decomp64)):
        res = [wp.zeros(n, dtype=t) for t in (M, Vec, M, M, M, M, Vec)]
        wp.launch(decomp, n, inputs=[wp.array(mats.astype(np.float64), dtype=M)], outputs=res,
                  device="cpu")
        U, s, V, Q, R, E, d = (r.numpy() for r in res)
        rec = np.einsum("nij,nj,nkj->nik", U.astype(float), s.astype(float), V.astype(float))
        tol = 1e-5 if prec == "32" else 1e-13
        assert np.abs(rec - mats).max() < tol * 3, "Warp's sweeps have not converged"
        for k, v in zip("U s V Q R E d".split(), (U, s, V, Q, R, E, d)):
            out[k + prec] = v
    grads = []
    for k in range(3):
        A = wp.array(mats, dtype=wp.mat33, requires_grad=True, device="cpu")
        loss = wp.zeros((n, 3), dtype=float, requires_grad=True, device="cpu")
        tape = wp.Tape()
        with tape:
            wp.launch(losses32, n, inputs=[A], outputs=[loss], device="cpu")
        seed = np.zeros((n, 3), np.float32)
        seed[:, k] = 1.0
        tape.backward(grads={loss: wp.array(seed, device="cpu")})
        grads.append(A.grad.numpy())
    out["grad32"] = np.stack(grads, 1)   # [matrix, loss, 3, 3]
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
    with contextlib.redirect_stdout(sys.stderr):  # Warp's start-up and module messages
        wp.init()
        out = _reference()
        out.update(_reference2())
    p = lambda s: print(s, file=file)  # noqa: E731
    p(f"# --- BEGIN WARP REFERENCE (tests/data/make_decomp_reference.py, Warp "
      f"{wp.config.version}, CPU)")
    p("WARP = {}")
    for key, v in out.items():
        p(f"WARP[{key!r}] = np.reshape({_literal(v, key[-2:])}, {v.shape})")
    p("# --- END WARP REFERENCE")


if __name__ == "__main__":
    main()
