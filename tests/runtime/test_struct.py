"""``@wp.struct``: kernel and func arguments, in-kernel construction, func results, loops,
arrays of structs, and gradients through float members (checked against numpy values and
central finite differences in float64)."""
import numpy as np
import pytest

import weft as wp
from weft.core.errors import KernelError, LaunchError


@wp.struct
class Inner:
    y: wp.float64


@wp.struct
class State:
    x: wp.float64
    v: wp.vec3d
    m: wp.mat22d
    inner: Inner
    k: int
    arr: wp.array(dtype=wp.float64)


@wp.struct
class Particle:
    p: wp.vec3d
    m: wp.float64
    tag: wp.int32


@wp.func
def energy(s: State, i: int):
    return s.x * s.arr[i] * s.arr[i] + wp.length(s.v) + s.inner.y


@wp.func
def doubled(a: wp.float64):
    s = Inner()
    s.y = a * wp.float64(2.0)
    return s


@wp.func
def scaled(p: Particle, c: wp.float64):
    q = p
    q.p = p.p * c
    return q


@wp.kernel
def struct_arg(s: State, out: wp.array(dtype=wp.float64)):
    i = wp.tid()
    t = s  # a copy: assigning t.x below leaves s alone
    t.x = t.x + wp.float64(1.0)
    q = doubled(s.arr[i])
    for j in range(s.k):  # a struct carried through a loop
        t.inner.y = t.inner.y * wp.float64(0.5) + q.y
    out[i] = energy(t, i) + s.m[1, 0] + s.x


def struct_arg_reference(x, v, m10, y, k, arr):
    yy = np.full_like(arr, y)
    for _ in range(k):
        yy = yy * 0.5 + 2.0 * arr
    return (x + 1.0) * arr ** 2 + np.linalg.norm(v) + yy + m10 + x


def make_state(arr):
    s = State()
    s.x = 2.0
    s.v = (1.0, 2.0, 2.0)
    s.m = wp.mat22d(1.0, 2.0, 3.0, 4.0)
    s.inner = Inner(y=0.5)
    s.k = 3
    s.arr = wp.array(arr, dtype=wp.float64, requires_grad=True)
    return s


def test_struct_argument_values_and_gradient():
    arr = np.array([1.0, -2.0, 0.5])
    s = make_state(arr)
    out = wp.zeros(3, dtype=wp.float64, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(struct_arg, 3, inputs=[s], outputs=[out])
    want = struct_arg_reference(2.0, np.array([1.0, 2.0, 2.0]), 3.0, 0.5, 3, arr)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-14)
    assert s.x == 2.0  # the kernel's copy did not write back
    dy = np.array([0.3, -1.0, 2.0])
    tape.backward(grads={out: dy})
    h = 1e-6
    fd = np.array([(struct_arg_reference(2.0, np.array([1.0, 2.0, 2.0]), 3.0, 0.5, 3,
                                         arr + h * e) -
                    struct_arg_reference(2.0, np.array([1.0, 2.0, 2.0]), 3.0, 0.5, 3,
                                         arr - h * e)) @ dy / (2 * h) for e in np.eye(3)])
    np.testing.assert_allclose(s.arr.grad.numpy(), fd, rtol=1e-8)
    # the tangent along the member array agrees with the same finite differences
    t = wp.jvp(struct_arg, 3, inputs=[s], outputs=[out], tangents={s.arr: np.ones(3)})
    fd_t = (struct_arg_reference(2.0, np.array([1.0, 2.0, 2.0]), 3.0, 0.5, 3, arr + h) -
            struct_arg_reference(2.0, np.array([1.0, 2.0, 2.0]), 3.0, 0.5, 3, arr - h)) / (2 * h)
    np.testing.assert_allclose(t[out].numpy(), fd_t, rtol=1e-8)


@wp.kernel
def particles(ps: wp.array(dtype=Particle), c: wp.float64, out: wp.array(dtype=wp.float64),
              moved: wp.array(dtype=Particle)):
    i = wp.tid()
    p = ps[i]
    q = scaled(p, c)
    out[i] = wp.dot(q.p, ps[i].p) * ps[i].m + wp.float64(ps[i].tag)
    moved[i] = q
    moved[i].tag = ps[i].tag + 1
    moved[i].p[2] = ps[i].m


def particles_reference(p, m, tag, c):
    return c * np.sum(p * p, axis=1) * m + tag


def _particles(device="cpu"):
    rng = np.random.default_rng(1)
    p = rng.normal(size=(4, 3))
    m = rng.uniform(0.5, 2.0, size=4)
    tag = np.array([3, 1, 4, 1])
    ps = wp.array([Particle(p=p[i], m=m[i], tag=int(tag[i])) for i in range(4)],
                  dtype=Particle, requires_grad=True, device=device)
    return p, m, tag, ps


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_array_of_structs(device):
    p, m, tag, ps = _particles(device)
    c = 1.5
    out = wp.zeros(4, dtype=wp.float64, requires_grad=True, device=device)
    moved = wp.zeros(4, dtype=Particle, device=device)
    tape = wp.Tape()
    with tape:
        wp.launch(particles, 4, inputs=[ps, c], outputs=[out, moved], device=device)
    np.testing.assert_allclose(out.numpy(), particles_reference(p, m, tag, c), rtol=1e-14)
    mv = moved.numpy()
    want_p = p * c
    want_p[:, 2] = m
    np.testing.assert_allclose(mv["p"], want_p, rtol=1e-14)
    np.testing.assert_allclose(mv["m"], m)
    np.testing.assert_array_equal(mv["tag"], tag + 1)

    dy = np.array([1.0, -0.5, 2.0, 0.25])
    tape.backward(grads={out: dy})
    g = ps.grad.numpy()
    # analytic: d/dp = 2 c m p dy, d/dm = c |p|^2 dy
    np.testing.assert_allclose(g["p"], 2 * c * (m * dy)[:, None] * p, rtol=1e-12)
    np.testing.assert_allclose(g["m"], c * np.sum(p * p, axis=1) * dy, rtol=1e-12)
    np.testing.assert_array_equal(g["tag"], 0)

    # forward mode along the masses, against central finite differences of the reference
    dps = wp.zeros(4, dtype=Particle, device=device)
    host = dps.numpy()
    host["m"] = np.array([1.0, 0.0, -1.0, 2.0])
    dps = wp.array(host, dtype=Particle, device=device)
    t = wp.jvp(particles, 4, inputs=[ps, c], outputs=[out, moved], tangents={ps: dps},
               device=device)
    h = 1e-6
    fd = (particles_reference(p, m + h * host["m"], tag, c) -
          particles_reference(p, m - h * host["m"], tag, c)) / (2 * h)
    np.testing.assert_allclose(t[out].numpy(), fd, rtol=1e-8)
    np.testing.assert_allclose(t[moved].numpy()["m"], host["m"], rtol=1e-14)


def test_struct_arrays_at_python_scope():
    z = wp.zeros(3, dtype=Particle)
    assert z.shape == (3,) and z.dtype is Particle
    dt = Particle.numpy_dtype()
    assert z.numpy().dtype == dt and dt["p"].shape == (3,) and dt["tag"] == np.int32
    np.testing.assert_array_equal(z.numpy()["p"], np.zeros((3, 3)))
    a = wp.array([[Particle(m=1.0), Particle(m=2.0)], [Particle(m=3.0), Particle(m=4.0)]],
                 dtype=Particle)
    assert a.shape == (2, 2)
    np.testing.assert_array_equal(a.numpy()["m"], [[1.0, 2.0], [3.0, 4.0]])
    back = Particle.from_record(a.numpy()[1, 0])
    assert back == Particle(m=3.0)
    s = State()
    assert s.arr is None and s.k == 0 and np.all(np.asarray(s.v) == 0)
    with pytest.raises(TypeError, match="v must be a vec3d"):
        s.v = (1.0, 2.0)
    with pytest.raises(TypeError, match="Struct field 'v' expects vec3d but got a single value"):
        s.v = 1.5  # as Warp: no broadcast of one value
    with pytest.raises(AttributeError, match="no member 'w'"):
        s.w = 1.0
    with pytest.raises(TypeError, match="arr must be an array of float64"):
        s.arr = wp.zeros(3, dtype=wp.float32)


def test_launch_errors_name_the_member():
    s = State()
    out = wp.zeros(3, dtype=wp.float64)
    with pytest.raises(LaunchError, match="array 's.arr' .* it is None"):  # unset: null
        wp.launch(struct_arg, 3, inputs=[s], outputs=[out])
    with pytest.raises(LaunchError, match="expected a State struct, got Inner"):
        wp.launch(struct_arg, 3, inputs=[Inner()], outputs=[out])
    with pytest.raises(LaunchError, match="expected an array of Particle"):
        wp.launch(particles, 4, inputs=[wp.zeros(4, dtype=float), 1.0],
                  outputs=[out, wp.zeros(4, dtype=Particle)])


def test_kernel_errors():
    @wp.kernel
    def unknown_member(s: State, out: wp.array(dtype=wp.float64)):
        out[0] = s.z

    with pytest.raises(KernelError, match=r"struct State has no member 'z': `z` is not an "
                       r"attribute of 's' \([\w.]+\.State\)$") as e:
        unknown_member.compiled()
    assert "out[0] = s.z" in str(e.value) and "^" in str(e.value)

    @wp.kernel
    def bad_member_type(out: wp.array(dtype=wp.float64)):
        s = Inner()
        s.y = wp.vec3d()
        out[0] = s.y

    with pytest.raises(KernelError, match=r"member 'y' of Inner has type float64, got vec3d"):
        bad_member_type.compiled()


@wp.struct
class KeyValue:
    key: wp.int32
    value: wp.float32


@wp.func
def larger(a: KeyValue, b: KeyValue) -> KeyValue:
    return wp.where(a.value < b.value, b, a)


@wp.kernel
def select_structs(x: wp.array(dtype=float), out: wp.array(dtype=KeyValue)):
    i = wp.tid()
    a = KeyValue(i, x[i])
    b = KeyValue(-i, 2.0)
    out[i] = larger(a, b)
    c = b if x[i] > 2.0 else a
    out[i].key = out[i].key + c.key * 100


def test_where_and_conditional_expressions_select_whole_structs():
    """``wp.where(c, s1, s2)`` and ``s1 if c else s2`` of struct values (Warp's tile argmax
    reduces with such a func)."""
    out = wp.zeros(3, dtype=KeyValue)
    wp.launch(select_structs, 3, inputs=[wp.array([1.0, 3.0, 0.5], dtype=float), out])
    got = out.numpy()
    # larger(): (0, 2.0), (1, 3.0), (-2, 2.0); the conditional: a, b, a -> keys 0, -1, 2
    assert got["key"].tolist() == [0 + 0, 1 - 100, -2 + 200]
    assert got["value"].tolist() == [2.0, 3.0, 2.0]
