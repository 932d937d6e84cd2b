"""Loops that call a query core once per point, for the tests: each ``loop_*`` is plain Python
(used as is with the uncompiled cores) and ``jit_*`` is the same loop under ``numba.njit``
(used with the compiled cores, passed in as ``fn``)."""
import hashlib

import numba
import numpy as np


def digest(a):
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()


def loop_slots(fn, tree, ijk, out):
    for n in range(ijk.shape[0]):
        out[n] = fn(tree, ijk[n, 0], ijk[n, 1], ijk[n, 2])


def loop_lookup(fn, tree, vals, gt, ijk, out):
    for n in range(ijk.shape[0]):
        out[n] = fn(tree, vals, gt, ijk[n, 0], ijk[n, 1], ijk[n, 2])


def loop_lookup3(fn, tree, vals, gt, ijk, out):
    for n in range(ijk.shape[0]):
        r = fn(tree, vals, gt, ijk[n, 0], ijk[n, 1], ijk[n, 2])
        out[n, 0] = r[0]
        out[n, 1] = r[1]
        out[n, 2] = r[2]


def loop_sample(fn, tree, vals, gt, pts, mode, out):
    for n in range(pts.shape[0]):
        out[n] = fn(tree, vals, gt, pts[n, 0], pts[n, 1], pts[n, 2], mode)


def loop_sample_i(fn, tree, vals, gt, pts, out):
    for n in range(pts.shape[0]):
        out[n] = fn(tree, vals, gt, pts[n, 0], pts[n, 1], pts[n, 2])


def loop_sample_generic(fn, tree, vals, gt, expected, zero, pts, mode, out):
    for n in range(pts.shape[0]):
        out[n] = fn(tree, vals, gt, expected, zero, pts[n, 0], pts[n, 1], pts[n, 2],
                    mode)


def loop_sample3(fn, tree, vals, gt, pts, mode, out):
    for n in range(pts.shape[0]):
        r = fn(tree, vals, gt, pts[n, 0], pts[n, 1], pts[n, 2], mode)
        out[n, 0] = r[0]
        out[n, 1] = r[1]
        out[n, 2] = r[2]


def loop_grad(fn, tree, vals, gt, pts, mode, out, grad):
    for n in range(pts.shape[0]):
        v, g = fn(tree, vals, gt, pts[n, 0], pts[n, 1], pts[n, 2], mode)
        out[n] = v
        grad[n, 0] = g[0]
        grad[n, 1] = g[1]
        grad[n, 2] = g[2]


def loop_grad3(fn, tree, vals, gt, expected, zero, pts, mode, out, jac):
    for n in range(pts.shape[0]):
        v, g = fn(tree, vals, gt, expected, zero, pts[n, 0], pts[n, 1], pts[n, 2],
                  mode)
        for c in range(3):
            out[n, c] = v[c]
        for c in range(9):
            jac[n, c] = g[c]


def loop_xform(fn, xf, pts, out):
    for n in range(pts.shape[0]):
        r = fn(xf, pts[n, 0], pts[n, 1], pts[n, 2])
        out[n, 0] = r[0]
        out[n, 1] = r[1]
        out[n, 2] = r[2]


def loop_index(fn, tree, idx, gt, ijk, out):
    for n in range(ijk.shape[0]):
        out[n] = fn(tree, idx, gt, ijk[n, 0], ijk[n, 1], ijk[n, 2])


def loop_sample_index(fn, tree, idx, gt, data, bg, zero, pts, mode, out):
    for n in range(pts.shape[0]):
        out[n] = fn(tree, idx, gt, data, bg, zero, pts[n, 0], pts[n, 1], pts[n, 2],
                    mode)


def loop_grad_index(fn, tree, idx, gt, data, bg, zero, pts, mode, out, grad):
    for n in range(pts.shape[0]):
        v, g = fn(tree, idx, gt, data, bg, zero, pts[n, 0], pts[n, 1], pts[n, 2], mode)
        out[n] = v
        grad[n, 0] = g[0]
        grad[n, 1] = g[1]
        grad[n, 2] = g[2]


def loop_sample_index3(fn, tree, idx, gt, data, bg, zero, pts, mode, out):
    for n in range(pts.shape[0]):
        r = fn(tree, idx, gt, data, bg, zero, pts[n, 0], pts[n, 1], pts[n, 2], mode)
        out[n, 0] = r[0]
        out[n, 1] = r[1]
        out[n, 2] = r[2]


def loop_store(fn, tree, vals, gt, ijk, new):
    for n in range(ijk.shape[0]):
        fn(tree, vals, gt, ijk[n, 0], ijk[n, 1], ijk[n, 2], new[n])


def loop_store3(fn, tree, vals, gt, ijk, new):
    for n in range(ijk.shape[0]):
        fn(tree, vals, gt, ijk[n, 0], ijk[n, 1], ijk[n, 2],
           (new[n, 0], new[n, 1], new[n, 2]))


def loop_lookup_g(fn, tree, vals, gt, expected, zero, ijk, out):
    for n in range(ijk.shape[0]):
        out[n] = fn(tree, vals, gt, expected, zero, ijk[n, 0], ijk[n, 1], ijk[n, 2])


def loop_lookup_g3(fn, tree, vals, gt, expected, zero, ijk, out):
    for n in range(ijk.shape[0]):
        r = fn(tree, vals, gt, expected, zero, ijk[n, 0], ijk[n, 1], ijk[n, 2])
        for c in range(3):
            out[n, c] = r[c]


def loop_lookup_g4(fn, tree, vals, gt, expected, zero, ijk, out):
    for n in range(ijk.shape[0]):
        r = fn(tree, vals, gt, expected, zero, ijk[n, 0], ijk[n, 1], ijk[n, 2])
        for c in range(4):
            out[n, c] = r[c]


def loop_sample_g3(fn, tree, vals, gt, expected, zero, pts, mode, out):
    for n in range(pts.shape[0]):
        r = fn(tree, vals, gt, expected, zero, pts[n, 0], pts[n, 1], pts[n, 2], mode)
        for c in range(3):
            out[n, c] = r[c]


def loop_sample_g4(fn, tree, vals, gt, expected, zero, pts, mode, out):
    for n in range(pts.shape[0]):
        r = fn(tree, vals, gt, expected, zero, pts[n, 0], pts[n, 1], pts[n, 2], mode)
        for c in range(4):
            out[n, c] = r[c]


_jit = numba.njit(cache=False)
for _name in [n for n in dir() if n.startswith("loop_")]:
    globals()["jit_" + _name[5:]] = _jit(globals()[_name])
