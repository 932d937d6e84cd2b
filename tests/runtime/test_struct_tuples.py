"""Tuples holding structs (``return geom1, geom2`` of a func annotated ``-> Tuple[Geom, Geom]``,
as MuJoCo Warp's collision code) and structs whose array members are unset (Warp's null
arrays) passed to funcs: forward values against numpy, the adjoint, the tangent and second
order against central finite differences in float64 (``tests/gradcheck.py``)."""
from typing import Tuple

import numpy as np
import pytest

import weft as wp
from weft.core.errors import KernelError, KernelIndexError
from tests.gradcheck import Arr, check


@wp.struct
class Geom:
    pos: wp.vec3d
    size: wp.float64
    vert: wp.array(dtype=wp.vec3d)
    nvert: int


@wp.func
def geom_pair(x: wp.array(dtype=wp.vec3d), s: wp.array(dtype=wp.float64),
              verts: wp.array(dtype=wp.vec3d), i: int, mesh: int) -> Tuple[Geom, Geom]:
    g1 = Geom()
    g2 = Geom()
    g1.pos = x[i]
    g1.size = s[i]
    g2.pos = x[i] * wp.float64(2.0)
    g2.size = s[i] * s[i]
    if mesh == 1:  # the array member is set on this path only (Warp: null on the other)
        g1.vert = verts
        g1.nvert = verts.shape[0]
    return g1, g2


@wp.func
def support(g: Geom, d: wp.vec3d):
    r = g.pos + g.size * d
    if g.nvert > 0:  # reads the vertices only where the geom has them, as MuJoCo Warp
        r = r + g.vert[g.nvert - 1]
    return r


@wp.func
def mixed(g: Geom, c: wp.float64):
    h = g
    h.size = g.size * c
    return c * c, h, wp.vec2d(c, g.size)  # a tuple of a float, a struct and a vector


@wp.kernel
def pairs(x: wp.array(dtype=wp.vec3d), s: wp.array(dtype=wp.float64),
          verts: wp.array(dtype=wp.vec3d), out: wp.array(dtype=wp.float64)):
    i = wp.tid()
    g1, g2 = geom_pair(x, s, verts, i, i % 2)
    t = geom_pair(x, s, verts, i, 0)  # a tuple variable, indexed
    a = support(g1, wp.vec3d(wp.float64(1.0), wp.float64(0.0), wp.float64(0.0)))
    b = support(g2, wp.vec3d(wp.float64(0.0), wp.float64(1.0), wp.float64(0.0)))
    c = support(t[1], wp.vec3d(wp.float64(0.0), wp.float64(0.0), wp.float64(1.0)))
    q, h, v = mixed(t[0], s[i])
    out[i] = wp.dot(a, b) + c[2] + q * h.size + v[1] + h.pos[0]


def pairs_reference(x, s, verts):
    x, s, verts = (np.asarray(a, dtype=np.float64) for a in (x, s, verts))
    res = []
    for i in range(len(s)):
        def support(pos, size, vert, d):
            r = pos + size * d
            return r + vert[-1] if vert is not None else r
        e = np.eye(3)
        a = support(x[i], s[i], verts if i % 2 else None, e[0])
        b = support(2 * x[i], s[i] ** 2, None, e[1])
        c = support(2 * x[i], s[i] ** 2, None, e[2])
        q, hsize, v1 = s[i] ** 2, s[i] * s[i], s[i]
        res.append(a @ b + c[2] + q * hsize + v1 + x[i][0])
    return np.array(res)


def test_func_returning_tuple_of_structs():
    rng = np.random.default_rng(1)
    n = 4
    check(pairs, n,
          [Arr(rng.normal(size=(n, 3)), wp.vec3d), Arr(rng.normal(size=n), wp.float64),
           Arr(rng.normal(size=(2, 3)), wp.vec3d)],
          [Arr(np.zeros(n), wp.float64)], reference=pairs_reference)


@wp.kernel
def unset_member(s: wp.array(dtype=wp.float64), out: wp.array(dtype=wp.float64)):
    i = wp.tid()
    g = Geom()  # vert is never set: support() is passed a null array and never reads it
    g.size = s[i]
    g.pos = wp.vec3d(s[i], wp.float64(1.0), wp.float64(2.0))
    r = support(g, wp.vec3d(wp.float64(1.0), wp.float64(1.0), wp.float64(0.0)))
    out[i] = r[0] * r[1] + r[2]


def test_unset_array_member_passed_to_func():
    data = np.array([0.5, -1.0, 2.0])
    check(unset_member, 3, [Arr(data, wp.float64)], [Arr(np.zeros(3), wp.float64)],
          reference=lambda s: (2 * s) * (s + 1) + 2.0)


@wp.func
def reads_unset(g: Geom):
    return g.vert.shape[0]


@wp.kernel
def null_shape(out: wp.array(dtype=int)):
    g = Geom()
    out[0] = reads_unset(g)  # a null array has no elements


def test_unset_member_is_a_null_array():
    out = wp.array([7], dtype=int)
    wp.launch(null_shape, 1, inputs=[out])
    assert out.numpy()[0] == 0


@wp.func
def takes_tuple(t: float):
    return t


@wp.kernel
def tuple_passed(x: wp.array(dtype=wp.vec3d), s: wp.array(dtype=wp.float64),
                 out: wp.array(dtype=wp.float64)):
    t = geom_pair(x, s, x, 0, 0)
    out[0] = takes_tuple(t)


@wp.func
def returns_view(x: wp.array(dtype=wp.vec3d)):
    g = Geom()
    g.vert = x[1:]
    return g


@wp.kernel
def view_returned(x: wp.array(dtype=wp.vec3d), out: wp.array(dtype=wp.float64)):
    g = returns_view(x)
    out[0] = g.size


@pytest.mark.parametrize("kernel, args, message", [
    (tuple_passed, lambda: [wp.zeros(2, dtype=wp.vec3d), wp.zeros(2, dtype=wp.float64),
                            wp.zeros(1, dtype=wp.float64)], "tuple holding a struct cannot"),
    (view_returned, lambda: [wp.zeros(2, dtype=wp.vec3d), wp.zeros(1, dtype=wp.float64)],
     "funcs can return only arrays passed to them"),
])
def test_tuple_and_member_errors(kernel, args, message):
    with pytest.raises(KernelError, match=message):
        wp.launch(kernel, 1, inputs=args())


@wp.func
def reads_vertex(g: Geom):
    return g.vert[0]


@wp.kernel
def null_read(out: wp.array(dtype=wp.vec3d)):
    g = Geom()
    out[0] = reads_vertex(g)  # a bad program: the null array has no element 0


def test_reading_an_unset_member_is_an_error():
    out = wp.zeros(1, dtype=wp.vec3d)
    with pytest.raises(KernelIndexError, match="out of bounds for axis 0 of array 'g.vert'"):
        wp.launch(null_read, 1, inputs=[out])


@wp.struct
class Pair:
    x: wp.float64
    y: wp.vec3d


@wp.func
def two(a: wp.float64) -> Tuple[Pair, wp.float64]:
    p = Pair()
    p.x = a
    p.y = wp.vec3d(a, wp.float64(2.0) * a, wp.float64(3.0))
    return p, a * a


@wp.func
def early(a: wp.float64):
    p = Pair()
    p.x = a
    if a > wp.float64(1.0):
        return p, wp.float64(1.0)  # an early return of a tuple holding a struct
    p.x = wp.float64(2.0) * a
    return p, a


@wp.kernel
def carried(x: wp.array(dtype=wp.float64), out: wp.array(dtype=wp.float64)):
    i = wp.tid()
    t = two(x[i])
    s = wp.float64(0.0)
    for j in range(3):  # a tuple variable holding a struct, carried through a loop
        t = two(t[0].x * wp.float64(0.5) + wp.float64(1.0))
        s += t[1]
    q, w = early(x[i])
    out[i] = s + t[0].y[1] + q.x * w


def carried_reference(x):
    out = []
    for a in x:
        t, s = a, 0.0
        for _ in range(3):
            t = 0.5 * t + 1.0
            s += t * t
        q, w = (a, 1.0) if a > 1 else (2 * a, a)
        out.append(s + 2 * t + q * w)
    return np.array(out)


def test_tuples_of_structs_in_loops_and_early_returns():
    check(carried, 3, [Arr(np.array([0.5, 2.0, -0.7]), wp.float64)],
          [Arr(np.zeros(3), wp.float64)], reference=carried_reference)


@wp.func
def pick(a: wp.array(dtype=wp.vec3d), b: wp.array(dtype=wp.vec3d), t: int, i: int):
    # MuJoCo Warp's multicontact: an array bound on some branches only (null on the others)
    if t == 0:
        arr = a
    elif t == 1:
        arr = b
    r = wp.vec3d()
    if t < 2:
        r = arr[i] * arr[i][1]
    else:
        r = wp.vec3d(wp.float64(arr.shape[0]))  # the null array has no elements
    return r


@wp.kernel
def picked(a: wp.array(dtype=wp.vec3d), b: wp.array(dtype=wp.vec3d),
           out: wp.array(dtype=wp.vec3d)):
    i = wp.tid()
    out[i] = pick(a, b, i % 3, i)


def picked_reference(a, b):
    out = np.zeros((6, 3))
    for i in range(6):
        src = a if i % 3 == 0 else b if i % 3 == 1 else None
        out[i] = src[i] * src[i][1] if src is not None else 0.0
    return out


def test_arrays_bound_on_some_branches_merge():
    rng = np.random.default_rng(4)
    check(picked, 6, [Arr(rng.normal(size=(6, 3)), wp.vec3d), Arr(rng.normal(size=(6, 3)), wp.vec3d)],
          [Arr(np.zeros((6, 3)), wp.vec3d)], reference=picked_reference,
          second_order=False)  # tape.hvp of a kernel making null arrays: not yet
