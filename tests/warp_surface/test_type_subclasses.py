"""A program's own subclasses of vector and matrix types (``class vec6f(wp.types.vector(
length=6, dtype=float))``, as MuJoCo Warp declares its types) are the same type as weft's of
that kind, shape and scalar, as in Warp: values of both mix in builtins and funcs."""
import numpy as np

import weft as wp


class vec6f(wp.types.vector(length=6, dtype=float)):
    pass


class mat66(wp.types.matrix(shape=(6, 6), dtype=float)):
    pass


@wp.func
def quadratic(m: mat66, v: vec6f):
    p = m * v                      # weft's own vec6f
    return wp.dot(v, p)            # (vec6f, weft's vec6f): MuJoCo Warp's snh_project


@wp.kernel
def forms(ms: wp.array(dtype=mat66), vs: wp.array(dtype=vec6f), out: wp.array(dtype=float)):
    i = wp.tid()
    s = vec6f(0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    for e in range(6):
        s[e] = vs[i][e]
    out[i] = quadratic(ms[i], s) + wp.dot(s + wp.vector(1.0, 1.0, 1.0, 1.0, 1.0, 1.0), s)


def test_types_are_equal_and_hash_alike():
    canonical = wp.types.vector(6, float)
    assert vec6f == canonical and canonical == vec6f and not (vec6f != canonical)
    assert hash(vec6f) == hash(canonical)
    assert {canonical: 1}[vec6f] == 1
    assert vec6f != wp.types.vector(6, wp.float64) and mat66 != wp.types.matrix((6, 6), wp.float64)
    assert wp.vec3 != wp.types.vector(16, wp.int64)


def test_mixed_values_in_a_kernel_and_the_gradient():
    rng = np.random.default_rng(0)
    M = rng.uniform(-1, 1, (2, 6, 6)).astype(np.float32)
    V = rng.uniform(-1, 1, (2, 6)).astype(np.float32)
    ms = wp.array(M, dtype=mat66, requires_grad=True)
    vs = wp.array(V, dtype=vec6f, requires_grad=True)
    out = wp.zeros(2, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(forms, 2, inputs=[ms, vs], outputs=[out])
    want = np.einsum("bi,bij,bj->b", V, M, V) + ((V + 1) * V).sum(1)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-5)
    tape.backward(grads={out: np.ones(2, np.float32)})
    # d/dv (v.Mv + v.v + sum v) = (M + M^T) v + 2 v + 1 ; d/dM = v v^T
    gv = np.einsum("bij,bj->bi", M + M.transpose(0, 2, 1), V) + 2 * V + 1
    np.testing.assert_allclose(vs.grad.numpy(), gv, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ms.grad.numpy(), np.einsum("bi,bj->bij", V, V), rtol=1e-5)
