"""Volume builtins of every value type in kernels (``weft.stdlib.geometry_volume``): lookups,
stores and samples of int64, uint32, vec3d, vec4f and vec4d grids through ``dtype=``;
``volume_sample_grad`` of vector grids (an N x 3 Jacobian); ``volume_sample_index`` and
``volume_sample_grad_index`` of scalar and vector voxel data. Values are checked against numpy
trilinear interpolation of the voxels; derivatives (with respect to the point, the voxel data and
the background, through the value and through ``grad``) in reverse and forward mode against
float64 central differences."""
import numpy as np
import pytest

import weft as wp

M33 = wp.mat33
M43D = wp.types.matrix((4, 3), wp.float64)
N = 32
H = 5e-2


@wp.kernel
def read_all(vi: wp.uint64, vu: wp.uint64, v3d: wp.uint64, v4f: wp.uint64, v4d: wp.uint64,
             ijk: wp.array(dtype=wp.vec3i), p: wp.array(dtype=wp.vec3), mode: int,
             li: wp.array(dtype=wp.int64), lu: wp.array(dtype=wp.uint32),
             l3d: wp.array(dtype=wp.vec3d), l4f: wp.array(dtype=wp.vec4f),
             l4d: wp.array(dtype=wp.vec4d), si: wp.array(dtype=wp.int64),
             su: wp.array(dtype=wp.uint32), s3d: wp.array(dtype=wp.vec3d),
             s4f: wp.array(dtype=wp.vec4f), s4d: wp.array(dtype=wp.vec4d)):
    t = wp.tid()
    c = ijk[t]
    li[t] = wp.volume_lookup(vi, c[0], c[1], c[2], dtype=wp.int64)
    lu[t] = wp.volume_lookup(vu, c[0], c[1], c[2], dtype=wp.uint32)
    l3d[t] = wp.volume_lookup(v3d, c[0], c[1], c[2], dtype=wp.vec3d)
    l4f[t] = wp.volume_lookup(v4f, c[0], c[1], c[2], dtype=wp.vec4f)
    l4d[t] = wp.volume_lookup(v4d, c[0], c[1], c[2], dtype=wp.vec4d)
    si[t] = wp.volume_sample(vi, p[t], wp.Volume.CLOSEST, dtype=wp.int64)
    su[t] = wp.volume_sample(vu, p[t], wp.Volume.CLOSEST, dtype=wp.uint32)
    s3d[t] = wp.volume_sample(v3d, p[t], mode, dtype=wp.vec3d)
    s4f[t] = wp.volume_sample(v4f, p[t], mode, dtype=wp.vec4f)
    s4d[t] = wp.volume_sample(v4d, p[t], mode, dtype=wp.vec4d)


@wp.kernel
def store_all(vi: wp.uint64, vu: wp.uint64, v4f: wp.uint64, ijk: wp.array(dtype=wp.vec3i),
              a: wp.array(dtype=wp.int64), b: wp.array(dtype=wp.uint32),
              c: wp.array(dtype=wp.vec4f)):
    t = wp.tid()
    q = ijk[t]
    wp.volume_store(vi, q[0], q[1], q[2], a[t])
    wp.volume_store(vu, q[0], q[1], q[2], b[t])
    wp.volume_store(v4f, q[0], q[1], q[2], c[t])


@wp.kernel
def grad_loss_vec(v4d: wp.uint64, v3f: wp.uint64, uvw: wp.array(dtype=wp.vec3), mode: int,
                  loss: wp.array(dtype=wp.float64), g4: wp.array(dtype=M43D),
                  g3: wp.array(dtype=M33)):
    """A loss of the samples and Jacobians of a vec4d and a vec3f grid."""
    i = wp.tid()
    ga = M43D()
    a = wp.volume_sample_grad(v4d, uvw[i], mode, ga, dtype=wp.vec4d)
    gb = M33()
    b = wp.volume_sample_grad(v3f, uvw[i], mode, gb, dtype=wp.vec3)
    g4[i] = ga
    g3[i] = gb
    w = wp.vec4d(wp.float64(0.5), wp.float64(-1.0), wp.float64(0.25), wp.float64(2.0))
    m = wp.vec3d(wp.float64(1.0), wp.float64(-0.5), wp.float64(0.75))
    s = wp.dot(w, a) + wp.dot(w, ga * m) + wp.float64(wp.dot(b, wp.vec3(0.3, 1.0, -0.7)))
    loss[i] = s + wp.float64((gb * wp.vec3(1.0, 2.0, -1.0))[1])


@wp.kernel
def index_loss(vid: wp.uint64, uvw: wp.array(dtype=wp.vec3), mode: int,
               fdata: wp.array(dtype=float), fbg: wp.array(dtype=float),
               vdata: wp.array(dtype=wp.vec4d), vbg: wp.array(dtype=wp.vec4d),
               loss: wp.array(dtype=wp.float64), fval: wp.array(dtype=float),
               fgrad: wp.array(dtype=wp.vec3), vval: wp.array(dtype=wp.vec4d),
               vgrad: wp.array(dtype=M43D)):
    """A loss of index-grid samples and Jacobians of float32 and vec4d voxel data."""
    i = wp.tid()
    gf = wp.vec3()
    f = wp.volume_sample_grad_index(vid, uvw[i], mode, fdata, fbg[0], gf)
    f2 = wp.volume_sample_index(vid, uvw[i], mode, fdata, fbg[0])
    gv = M43D()
    v = wp.volume_sample_grad_index(vid, uvw[i], mode, vdata, vbg[0], gv)
    v2 = wp.volume_sample_index(vid, uvw[i], mode, vdata, vbg[0])
    fval[i] = f
    fgrad[i] = gf
    vval[i] = v
    vgrad[i] = gv
    w = wp.vec4d(wp.float64(0.5), wp.float64(-1.0), wp.float64(0.25), wp.float64(2.0))
    m = wp.vec3d(wp.float64(1.0), wp.float64(-0.5), wp.float64(0.75))
    lf = f * f2 + wp.dot(gf, wp.vec3(0.4, -1.0, 0.6))
    loss[i] = wp.float64(lf) + wp.dot(w, v2) + wp.dot(w, gv * m) + wp.dot(v, v2) * wp.float64(0.01)


# ------------------------------------------------------------------------------ grids
SIZE = 12
IJK = np.stack(np.meshgrid(*[np.arange(SIZE)] * 3, indexing="ij"), -1).reshape(-1, 3)


def field(ijk, channels):
    """A smooth non-linear field (mixed second derivatives nonzero) of ``channels`` values."""
    x, y, z = (np.asarray(ijk, np.float64)[..., c] for c in range(3))
    out = [np.sin(0.5 * x + c) * np.cos(0.3 * y - c) * (z - 4.0 + c) + c for c in
           range(channels)]
    return np.stack(out, -1)


def grid(dtype_name, bg, channels, scalar):
    vol = wp.Volume.allocate((0, 0, 0), (SIZE - 1,) * 3, 1.0, bg_value=bg, dtype=dtype_name)
    vals = field(IJK, channels).reshape(SIZE, SIZE, SIZE, channels)
    vol._store_dense((vals if channels > 1 else vals[..., 0]).astype(scalar))
    return vol, vals


def trilinear(vals, p, grad=False):
    """numpy trilinear interpolation of ``vals[i, j, k, c]`` (and its Jacobian) at ``p``."""
    b = np.floor(p).astype(int)
    f = p - b
    value = 0.0
    jac = np.zeros(p.shape[:1] + vals.shape[3:] + (3,))
    for n in range(8):
        o = np.array([(n >> 2) & 1, (n >> 1) & 1, n & 1])
        w = np.where(o == 1, f, 1.0 - f)
        v = vals[b[:, 0] + o[0], b[:, 1] + o[1], b[:, 2] + o[2]]
        value = value + np.prod(w, axis=1)[:, None] * v
        for c in range(3):
            dw = np.prod(np.delete(w, c, axis=1), axis=1) * (1.0 if o[c] else -1.0)
            jac[..., c] += dw[:, None] * v
    return (value, jac) if grad else value


def points(n, seed, lo=0, hi=SIZE - 1, frac=(0.2, 0.8)):
    rng = np.random.default_rng(seed)
    return (rng.integers(lo, hi, size=(n, 3)) + rng.uniform(*frac, size=(n, 3))).astype(
        np.float32)


@pytest.fixture(scope="module")
def grids():
    return {"int64": grid("int64", np.int64(-3), 1, np.int64),
            "uint32": grid("uint32", np.uint32(7), 1, np.uint32),
            "vec3d": grid("Vec3d", (0.0, 0.0, 0.0), 3, np.float64),
            "vec4f": grid("Vec4f", (0.0, 0.0, 0.0, 0.0), 4, np.float32),
            "vec4d": grid("Vec4d", (0.0, 0.0, 0.0, 0.0), 4, np.float64),
            "vec3f": grid("Vec3f", (0.0, 0.0, 0.0), 3, np.float32)}


def _read(grids, ijk, p, mode):
    outs = [wp.zeros(len(p), dtype=t) for t in (wp.int64, wp.uint32, wp.vec3d, wp.vec4f,
                                                wp.vec4d, wp.int64, wp.uint32, wp.vec3d,
                                                wp.vec4f, wp.vec4d)]
    ids = [grids[n][0].id for n in ("int64", "uint32", "vec3d", "vec4f", "vec4d")]
    wp.launch(read_all, len(p), inputs=ids + [wp.array(ijk, dtype=wp.vec3i),
                                              wp.array(p, dtype=wp.vec3), mode] + outs)
    return [o.numpy() for o in outs]


def test_lookup_and_sample_every_value_type(grids):
    rng = np.random.default_rng(0)
    ijk = rng.integers(-2, SIZE + 2, size=(N, 3)).astype(np.int32)  # some outside: background
    p = points(N, 1)
    li, lu, l3d, l4f, l4d, si, su, s3d, s4f, s4d = _read(grids, ijk, p, wp.Volume.LINEAR)
    inside = np.all((ijk >= 0) & (ijk < SIZE), axis=1)
    assert 0 < inside.sum() < N
    for got, name, bg, dt in ((li, "int64", -3, np.int64), (lu, "uint32", 7, np.uint32)):
        vals = grids[name][1][..., 0].astype(dt)
        want = np.where(inside, vals[tuple(np.clip(ijk, 0, SIZE - 1).T)], bg)
        assert got.dtype == dt and np.array_equal(got, want)
    for got, name, dt in ((l3d, "vec3d", np.float64), (l4f, "vec4f", np.float32),
                          (l4d, "vec4d", np.float64)):
        vals = grids[name][1].astype(dt)
        want = np.where(inside[:, None], vals[tuple(np.clip(ijk, 0, SIZE - 1).T)], 0.0)
        assert np.array_equal(got, want)
    # CLOSEST on integers: the nearest voxel
    near = np.floor(p + 0.5).astype(int)
    assert np.array_equal(si, grids["int64"][1][..., 0].astype(np.int64)[tuple(near.T)])
    assert np.array_equal(su, grids["uint32"][1][..., 0].astype(np.uint32)[tuple(near.T)])
    # LINEAR on vector grids: numpy's trilinear interpolation of the stored voxels
    for got, name, dt, tol in ((s3d, "vec3d", np.float64, 1e-6), (s4f, "vec4f", np.float32,
                                                                     1e-5),
                               (s4d, "vec4d", np.float64, 1e-6)):
        want = trilinear(grids[name][1].astype(dt).astype(np.float64), p.astype(np.float64))
        np.testing.assert_allclose(got, want, rtol=0, atol=tol * 10)
    # CLOSEST on vector grids: the nearest voxel exactly; an unknown mode: zero
    c3d, c4f = _read(grids, ijk, p, wp.Volume.CLOSEST)[7:9]
    assert np.array_equal(c3d, grids["vec3d"][1][tuple(near.T)])
    assert np.array_equal(c4f, grids["vec4f"][1].astype(np.float32)[tuple(near.T)])
    assert not np.any(_read(grids, ijk, p, 7)[9])


def test_store_every_value_type():
    vi = wp.Volume.allocate((0, 0, 0), (7, 7, 7), 1.0, bg_value=np.int64(0), dtype="int64")
    vu = wp.Volume.allocate((0, 0, 0), (7, 7, 7), 1.0, bg_value=np.uint32(0), dtype="uint32")
    v4 = wp.Volume.allocate((0, 0, 0), (7, 7, 7), 1.0, bg_value=(0.0,) * 4, dtype="Vec4f")
    ijk = np.array([[1, 2, 3], [7, 0, 5], [40, 40, 40]], np.int32)  # the last: no leaf
    a = np.array([2 ** 40, -5, 9], np.int64)
    b = np.array([2 ** 31 + 3, 1, 2], np.uint32)
    c = np.arange(12, dtype=np.float32).reshape(3, 4)
    wp.launch(store_all, 3, inputs=[vi.id, vu.id, v4.id, wp.array(ijk, dtype=wp.vec3i),
                                    wp.array(a, dtype=wp.int64), wp.array(b, dtype=wp.uint32),
                                    wp.array(c, dtype=wp.vec4f)])
    grids = {"int64": (vi,), "uint32": (vu,), "vec3d": (vi,), "vec4f": (v4,), "vec4d": (vi,)}
    li, lu, _, l4f = _read(grids, ijk, np.zeros((3, 3), np.float32), 0)[:4]
    assert np.array_equal(li, [a[0], a[1], 0]) and np.array_equal(lu, [b[0], b[1], 0])
    assert np.array_equal(l4f, np.concatenate([c[:2], np.zeros((1, 4), np.float32)]))


def _run_vec(grids, p, mode, tangent=None):
    n = len(p)
    pts = wp.array(p, dtype=wp.vec3, requires_grad=True)
    loss = wp.zeros(n, dtype=wp.float64, requires_grad=True)
    g4 = wp.zeros(n, dtype=M43D, requires_grad=True)
    g3 = wp.zeros(n, dtype=M33, requires_grad=True)
    inputs = [grids["vec4d"][0].id, grids["vec3f"][0].id, pts, mode]
    if tangent is not None:
        t = wp.jvp(grad_loss_vec, n, inputs=inputs, outputs=[loss, g4, g3],
                   tangents={pts: tangent})
        return t[loss].numpy()
    tape = wp.Tape()
    with tape:
        wp.launch(grad_loss_vec, n, inputs=inputs, outputs=[loss, g4, g3])
    return loss, g4, g3, pts, tape


def _central(fn, p):
    """d fn(p)_i / d p_i (n x 3), float64 central differences over the steps taken in
    float32."""
    jac = np.zeros(p.shape)
    for c in range(3):
        hi, lo = p.copy(), p.copy()
        hi[:, c] += np.float32(H)
        lo[:, c] -= np.float32(H)
        jac[:, c] = (fn(hi) - fn(lo)) / (hi[:, c].astype(np.float64) - lo[:, c])
    return jac


def test_vector_sample_grad_values_and_derivatives(grids):
    p = points(N, 2)
    loss, g4, g3, pts, tape = _run_vec(grids, p, wp.Volume.LINEAR)
    _, j4 = trilinear(grids["vec4d"][1], p.astype(np.float64), grad=True)
    _, j3 = trilinear(grids["vec3f"][1].astype(np.float32).astype(np.float64),
                      p.astype(np.float64), grad=True)
    np.testing.assert_allclose(g4.numpy(), j4, rtol=0, atol=1e-5)
    np.testing.assert_allclose(g3.numpy(), j3, rtol=0, atol=1e-4)
    want = _central(lambda q: _run_vec(grids, q, wp.Volume.LINEAR)[0].numpy(), p)
    scale = np.abs(want).max()
    tape.backward(grads={loss: np.ones(N)})
    np.testing.assert_allclose(pts.grad.numpy(), want, rtol=0, atol=2e-3 * scale)
    d = np.random.default_rng(3).uniform(-1, 1, size=(N, 3)).astype(np.float32)
    np.testing.assert_allclose(_run_vec(grids, p, wp.Volume.LINEAR, d), np.sum(want * d, 1),
                               rtol=0, atol=2e-3 * scale)
    # CLOSEST: the nearest voxel, a zero Jacobian, zero derivatives
    loss, g4, g3, pts, tape = _run_vec(grids, p, wp.Volume.CLOSEST)
    assert not np.any(g4.numpy()) and not np.any(g3.numpy()) and np.any(loss.numpy())
    tape.backward(grads={loss: np.ones(N)})
    assert not np.any(pts.grad.numpy())


def test_transposed_gradient_matrix_is_rejected():
    M34 = wp.types.matrix((3, 4), wp.float32)

    @wp.kernel
    def k(vid: wp.uint64, out: wp.array(dtype=wp.vec4f)):
        g = M34()
        out[0] = wp.volume_sample_grad(vid, wp.vec3(0.5), wp.Volume.LINEAR, g, dtype=wp.vec4f)

    with pytest.raises(wp.KernelError, match=r"Incompatible gradient type, expected mat43f, "
                       r"got mat34f") as e:
        wp.launch(k, 1, inputs=[0, wp.zeros(1, dtype=wp.vec4f)])
    assert "test_volume_typed_kernels.py:" in str(e.value)


# ------------------------------------------------------------------------------ index grids
@pytest.fixture(scope="module")
def index_grid():
    vol = wp.Volume.allocate((0, 0, 0), (SIZE - 1,) * 3, 1.0, bg_value=None)
    ijk = vol.get_voxels().numpy()
    return vol, ijk


def _index_run(vol, p, mode, fdata, fbg, vdata, vbg, grads=False, tangents=None):
    n = len(p)
    args = [wp.array(p, dtype=wp.vec3, requires_grad=True),
            wp.array(fdata, dtype=float, requires_grad=True),
            wp.array([fbg], dtype=float, requires_grad=True),
            wp.array(vdata, dtype=wp.vec4d, requires_grad=True),
            wp.array([vbg], dtype=wp.vec4d, requires_grad=True)]
    outs = [wp.zeros(n, dtype=t, requires_grad=True)
            for t in (wp.float64, float, wp.vec3, wp.vec4d, M43D)]
    inputs = [vol.id, args[0], mode] + args[1:]
    if tangents is not None:
        t = wp.jvp(index_loss, n, inputs=inputs, outputs=outs,
                   tangents={a: tv for a, tv in zip(args, tangents) if tv is not None})
        return t[outs[0]].numpy()
    tape = wp.Tape()
    with tape:
        wp.launch(index_loss, n, inputs=inputs, outputs=outs)
    if grads:
        tape.backward(grads={outs[0]: np.ones(n)})
        return [o.numpy() for o in outs], [a.grad.numpy() for a in args]
    return [o.numpy() for o in outs]


def test_index_sampling_values(index_grid):
    vol, ijk = index_grid
    fdata = field(ijk, 1)[:, 0].astype(np.float32)
    vdata = field(ijk, 4)
    p = points(N, 4, lo=-1, hi=SIZE)  # the cells at the edges mix in the background
    loss, fval, fgrad, vval, vgrad = _index_run(vol, p, wp.Volume.LINEAR, fdata, -2.0, vdata,
                                                (1.0, 2.0, 3.0, 4.0))
    size = (int(ijk.max()) + 3,) * 3  # every voxel with data, a border of background
    dense_f = np.full(size + (1,), -2.0)
    dense_v = np.tile(np.array([1.0, 2.0, 3.0, 4.0]), size + (1,))
    dense_f[tuple((ijk + 1).T)] = fdata[:, None]
    dense_v[tuple((ijk + 1).T)] = vdata
    q = p.astype(np.float64) + 1.0
    wf, jf = trilinear(dense_f, q, grad=True)
    wv, jv = trilinear(dense_v, q, grad=True)
    np.testing.assert_allclose(fval, wf[:, 0], rtol=0, atol=1e-4)
    np.testing.assert_allclose(fgrad, jf[:, 0], rtol=0, atol=1e-4)
    np.testing.assert_allclose(vval, wv, rtol=0, atol=1e-5)
    np.testing.assert_allclose(vgrad, jv, rtol=0, atol=1e-5)
    near = np.floor(p + 0.5).astype(int) + 1
    c = _index_run(vol, p, wp.Volume.CLOSEST, fdata, -2.0, vdata, (1.0, 2.0, 3.0, 4.0))
    assert np.array_equal(c[1], dense_f[tuple(near.T)][:, 0].astype(np.float32))
    assert np.array_equal(c[3], dense_v[tuple(near.T)]) and not np.any(c[4])


def test_index_sampling_derivatives(index_grid):
    """With respect to the point (central differences), and to the voxel data and background
    (along a random direction of all of them, central differences of the loss)."""
    vol, ijk = index_grid
    rng = np.random.default_rng(6)
    fdata = field(ijk, 1)[:, 0].astype(np.float32)
    vdata = field(ijk, 4)
    bgs = (np.float32(-2.0), np.array([1.0, 2.0, 3.0, 4.0]))
    p = points(N, 5, lo=-1, hi=SIZE)

    def loss_at(q, fd=fdata, fb=bgs[0], vd=vdata, vb=bgs[1]):
        return _index_run(vol, q, wp.Volume.LINEAR, fd, fb, vd, vb)[0]
    want = _central(loss_at, p)
    scale = np.abs(want).max()
    outs, grads = _index_run(vol, p, wp.Volume.LINEAR, fdata, bgs[0], vdata, bgs[1],
                             grads=True)
    np.testing.assert_allclose(grads[0], want, rtol=0, atol=2e-3 * scale)
    d = rng.uniform(-1, 1, size=(N, 3)).astype(np.float32)
    got = _index_run(vol, p, wp.Volume.LINEAR, fdata, bgs[0], vdata, bgs[1],
                     tangents=[d, None, None, None, None])
    np.testing.assert_allclose(got, np.sum(want * d, 1), rtol=0, atol=2e-3 * scale)
    # the data and backgrounds, along one random direction of all of them
    tf = rng.uniform(-1, 1, size=fdata.shape).astype(np.float32)
    tfb = np.float32(0.7)
    tv = rng.uniform(-1, 1, size=vdata.shape)
    tvb = rng.uniform(-1, 1, size=4)
    e = 1e-2
    fd = (loss_at(p, fdata + e * tf, bgs[0] + e * tfb, vdata + e * tv, bgs[1] + e * tvb)
          - loss_at(p, fdata - e * tf, bgs[0] - e * tfb, vdata - e * tv, bgs[1] - e * tvb))
    fd = fd / (2 * e)
    assert np.abs(fd).max() > 0.1 and np.any(grads[2]) and np.any(grads[4])
    rev = (np.dot(grads[1], tf) + grads[2][0] * tfb + np.sum(grads[3] * tv)
           + np.dot(grads[4][0], tvb))
    np.testing.assert_allclose(rev, fd.sum(), rtol=1e-3)
    fwd = _index_run(vol, p, wp.Volume.LINEAR, fdata, bgs[0], vdata, bgs[1],
                     tangents=[None, tf, np.array([tfb]), tv, tvb[None]])
    np.testing.assert_allclose(fwd, fd, rtol=0, atol=1e-3 * np.abs(fd).max())


def test_bad_index_and_dtype_arguments_are_located_kernel_errors():
    @wp.kernel
    def bad_background(vid: wp.uint64, d: wp.array(dtype=wp.vec4f),
                       out: wp.array(dtype=wp.vec4f)):
        out[0] = wp.volume_sample_index(vid, wp.vec3(0.5), wp.Volume.LINEAR, d, wp.vec4d())

    @wp.kernel
    def int_data(vid: wp.uint64, d: wp.array(dtype=int), out: wp.array(dtype=int)):
        out[0] = wp.volume_sample_index(vid, wp.vec3(0.5), wp.Volume.LINEAR, d, 0)

    @wp.kernel
    def bad_dtype(vid: wp.uint64, out: wp.array(dtype=wp.vec2f)):
        out[0] = wp.volume_sample(vid, wp.vec3(0.5), wp.Volume.LINEAR, dtype=wp.vec2f)

    for kernel, dtype, msg in ((bad_background, wp.vec4f, "background must have the voxel "
                                "data's type vec4f, got vec4d"),
                               (int_data, int, "voxel data of float32, float64, vec3 or vec4"),
                               (bad_dtype, wp.vec2f, r"volume_sample\(dtype=vec2f\)")):
        args = [0] + ([wp.zeros(1, dtype=dtype)] if kernel is not bad_dtype else [])
        with pytest.raises(wp.KernelError, match=msg) as e:
            wp.launch(kernel, 1, inputs=args + [wp.zeros(1, dtype=dtype)])
        assert "test_volume_typed_kernels.py:" in str(e.value)


@wp.kernel
def sample_index_fv(vid: wp.uint64, p: wp.array(dtype=wp.vec3), mode: int,
                    data: wp.array(dtype=float), datav: wp.array(dtype=wp.vec3),
                    bg: float, bgv: wp.vec3, out: wp.array(dtype=float),
                    outv: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    out[i] = wp.volume_sample_index(vid, p[i], mode, data, bg)
    outv[i] = wp.volume_sample_index(vid, p[i], mode, datav, bgv)


def test_index_sampling_is_warps_bit_for_bit():
    """Against Warp 1.19's samples (``volume_reference.py``, by SHA-256): both grids of
    test_index_grid.nvdb, CLOSEST and LINEAR, at special points (non-finite, huge, on faces)
    and 2048 random ones."""
    from tests.geometry import drivers as D
    from tests.geometry import make_volume_reference as M
    from tests.geometry import volume_reference as W
    from tests.geometry.conftest import path
    v = wp.Volume.load_from_nvdb(path("test_index_grid.nvdb"))
    pts = M.points(seed=3, lo=-17.0, hi=17.0)
    for gi, g in enumerate((v, v.load_next_grid())):
        n = g.get_voxel_count()
        data = np.arange(n, dtype=np.float32) * np.float32(1.5) + np.float32(1.0)
        datav = np.arange(3 * n, dtype=np.float32).reshape(n, 3) - np.float32(5.0)
        for mode, mname in ((0, "CLOSEST"), (1, "LINEAR")):
            out = wp.zeros(len(pts), dtype=float)
            outv = wp.zeros(len(pts), dtype=wp.vec3)
            wp.launch(sample_index_fv, len(pts), inputs=[
                g.id, wp.array(pts, dtype=wp.vec3), mode, wp.array(data, dtype=float),
                wp.array(datav, dtype=wp.vec3), 7.5, wp.vec3(1.0, -2.0, 0.5), out, outv])
            assert D.digest(out.numpy()) == getattr(W, f"INDEX{gi}_{mname}_DIGEST")
            assert D.digest(outv.numpy()) == getattr(W, f"INDEX{gi}_{mname}_V_DIGEST")


def test_other_value_types_are_warps_bit_for_bit():
    """Lookups and CLOSEST samples of int64, uint32, Vec3d, Vec4f, Vec4d grids written by Warp
    (``warp_<type>.nvdb``), and LINEAR samples of the vector ones, against Warp 1.19's outputs
    (``volume_reference.py``, by SHA-256)."""
    from tests.geometry import drivers as D
    from tests.geometry import make_volume_reference as M
    from tests.geometry import volume_reference as W
    from tests.geometry.conftest import path
    names = ("int64", "uint32", "Vec3d", "Vec4f", "Vec4d")
    grids = {n: (wp.Volume.load_from_nvdb(path(f"warp_{n}.nvdb")),) for n in names}
    grids = dict(zip(("int64", "uint32", "vec3d", "vec4f", "vec4d"), grids.values()))
    ijk = M.ijk_points(seed=7, lo=-12, hi=20, n=400)
    pts = M.points(seed=8, lo=-12.0, hi=20.0)[:len(ijk)]
    for mode, label in ((0, "CLOSEST"), (1, "LINEAR")):
        out = _read(grids, ijk, pts, mode)
        for k, name in enumerate(names):
            if mode == 0:
                assert D.digest(out[k]) == getattr(W, f"TYPE_{name}_LOOKUP_DIGEST"), name
            if mode == 0 or k >= 2:
                assert D.digest(out[5 + k]) == getattr(W, f"TYPE_{name}_{label}_DIGEST"), name
