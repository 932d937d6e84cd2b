"""Arrays read and then overwritten in one kernel: exact gradients (snapshot) or a clear error."""
import numpy as np
import pytest

import weft as wp


@wp.kernel
def square_in_place(x: wp.array(dtype=wp.float64)):
    i = wp.tid()
    x[i] = x[i] * x[i]


@wp.kernel
def copy_first(x: wp.array(dtype=wp.float64)):
    i = wp.tid()
    if i == 0:
        x[1] = x[0] * wp.float64(2.0)


@wp.kernel
def total(x: wp.array(dtype=wp.float64), loss: wp.array(dtype=wp.float64)):
    i = wp.tid()
    wp.atomic_add(loss, 0, x[i])


def _run(kernel, x0, times=2):
    x = wp.array(x0, dtype=wp.float64, requires_grad=True)
    loss = wp.zeros(1, dtype=wp.float64, requires_grad=True)
    tape = wp.Tape()
    with tape:
        for _ in range(times):
            wp.launch(kernel, len(x0), inputs=[x])
        wp.launch(total, len(x0), inputs=[x, loss])
    tape.backward(loss)
    return x, loss


def test_in_place_square_twice_gives_the_exact_gradient():
    x0 = np.array([0.5, 1.5, -2.0])
    x, loss = _run(square_in_place, x0)
    np.testing.assert_allclose(loss.numpy()[0], (x0 ** 4).sum())
    np.testing.assert_allclose(x.grad.numpy(), 4 * x0 ** 3)   # d/dx (x^2)^2


def test_error_mode_names_the_lines(monkeypatch):
    monkeypatch.setattr(wp.config, "overwrite_gradients", "error")
    with pytest.raises(wp.KernelError, match=r"array 'x' is read \(line \d+\) and then "
                       r"overwritten \(line \d+\)") as info:
        _run(square_in_place, np.ones(3))
    assert "x[i] = x[i] * x[i]" in str(info.value)


def test_warn_mode(monkeypatch):
    monkeypatch.setattr(wp.config, "overwrite_gradients", "warn")
    with pytest.warns(UserWarning, match="overwritten"):
        _run(square_in_place, np.ones(3), times=1)


@wp.kernel
def accumulate_into_next(x: wp.array(dtype=wp.float64)):
    i = wp.tid()
    if i == 0:
        x[1] = x[1] + x[0]  # reads element 1 before overwriting it, at another thread's element


@wp.kernel
def walk_tree(parent: wp.array(dtype=int), x0: wp.array(dtype=wp.float64),
              x: wp.array(dtype=wp.float64)):
    # one thread per tree, parents first (MuJoCo Warp's kinematics): each element from its
    # parent's, which the same thread wrote earlier in the launch
    for b in range(x.shape[0]):
        p = parent[b]
        v = x0[b]
        if p >= 0:
            v = v * x[p] + x0[b] * x0[b]
        x[b] = v


def test_reads_of_elements_written_earlier_in_the_launch_replay_exactly():
    """Writes at other threads' elements that are only read after the launch wrote them (or
    never written): the adjoint replays from the values after the launch (checked at launch),
    and the stores reset the gradient, so launching twice into one buffer is exact too."""
    parent = wp.array(np.array([-1, 0, 1, 1], dtype=np.int32))
    a = np.array([0.5, 1.5, 0.7, 1.2])

    def f(a):
        x = np.zeros(4)
        for b in range(4):
            p = parent.numpy()[b]
            x[b] = a[b] * x[p] + a[b] ** 2 if p >= 0 else a[b]
        return (x ** 2).sum()

    for times in (1, 2):
        x0 = wp.array(a, dtype=wp.float64, requires_grad=True)
        x = wp.zeros(4, dtype=wp.float64, requires_grad=True)
        loss = wp.zeros(1, dtype=wp.float64, requires_grad=True)
        tape = wp.Tape()
        with tape:
            for _ in range(times):
                wp.launch(walk_tree, 1, inputs=[parent, x0], outputs=[x])
            wp.launch(square_sum, 4, inputs=[x, loss])
        tape.backward(loss)
        fd = [(f(a + 1e-6 * e) - f(a - 1e-6 * e)) / 2e-6 for e in np.eye(4)]
        np.testing.assert_allclose(loss.numpy()[0], f(a))
        np.testing.assert_allclose(x0.grad.numpy(), fd, rtol=1e-7)


@wp.kernel
def square_sum(x: wp.array(dtype=wp.float64), loss: wp.array(dtype=wp.float64)):
    i = wp.tid()
    wp.atomic_add(loss, 0, x[i] * x[i])


def test_copy_at_another_threads_element_of_an_unchanged_value_is_exact():
    x, loss = _run(copy_first, np.array([1.0, 5.0, 3.0]), times=2)
    np.testing.assert_allclose(x.numpy(), [1.0, 2.0, 3.0])
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 0.0, 1.0])  # loss = x0 + 2 x0 + x2


def test_reads_before_overwrites_at_other_threads_elements_replay_the_stores():
    """x[1] = x[1] + x[0] by thread 0: neither a copy from before the launch nor the values
    after it replay it alone; the CPU adjoint replays the store into a copy and puts the old
    element back as its reverse sweep passes it."""
    x, loss = _run(accumulate_into_next, np.array([1.0, 2.0, 3.0]), times=2)
    np.testing.assert_allclose(x.numpy(), [1.0, 4.0, 3.0])
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 1.0, 1.0])  # loss = 3 x0 + x1 + x2


@wp.kernel
def accumulate_with_atomic(x: wp.array(dtype=wp.float64)):
    i = wp.tid()
    if i == 0:
        x[1] = x[1] + x[0]
    wp.atomic_max(x, 2, x[0])  # an atomic max on the array: its stores are not replayed


def test_reads_before_overwrites_that_are_not_replayed_are_an_error():
    with pytest.raises(wp.KernelError, match="a snapshot cannot make exact") as info:
        _run(accumulate_with_atomic, np.array([1.0, 2.0, 3.0]), times=1)
    assert "x[1] = x[1] + x[0]" in str(info.value)


def test_forward_only_use_is_not_affected():
    x = wp.array(np.array([2.0, 3.0]), dtype=wp.float64)
    wp.launch(square_in_place, 2, inputs=[x])
    np.testing.assert_allclose(x.numpy(), [4.0, 9.0])


@wp.kernel
def maybe_copy(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64),
               z: wp.array(dtype=wp.float64)):
    i = wp.tid()
    if y:
        y[i] = x[i]
    z[i] = x[i] * wp.float64(2.0)


def test_null_output_arrays_on_a_tape_with_reads_to_protect():
    """Warp's null array (None) as an output of a launch while the tape protects earlier reads:
    nothing to protect in it (this crashed), and ``z`` written twice counts once."""
    x = wp.array(np.ones(3), dtype=wp.float64, requires_grad=True)
    z = wp.zeros(3, dtype=wp.float64, requires_grad=True)
    tape = wp.Tape()
    with tape:
        for _ in range(2):
            wp.launch(maybe_copy, 3, inputs=[x, None, z])
    tape.backward(grads={z: np.ones(3)})
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 2.0, 2.0])


@wp.kernel
def write_then_read(x0: wp.array(dtype=wp.float64), x: wp.array(dtype=wp.float64),
                    y: wp.array(dtype=wp.float64)):
    i = wp.tid()
    x[i] = x0[i] * wp.float64(2.0)
    y[i] = x[i] * x[i]  # reads what this thread just wrote


@wp.kernel
def square_thrice(x: wp.array(dtype=wp.float64)):
    i = wp.tid()
    for _j in range(3):
        x[i] = x[i] * x[i]  # each iteration reads what the one before wrote


def _launch_and_back(kernel, args, y):
    """One launch over ``y``'s length on a tape, then backward from ones on ``y``."""
    tape = wp.Tape()
    with tape:
        wp.launch(kernel, y.shape[0], inputs=args)
    tape.backward(grads={y: np.ones(y.shape[0])})


def test_own_element_read_after_write_replays_the_written_value():
    """A read after the thread's own write saw the new value: a copy from before the launch
    replayed the old one (a silently wrong gradient, 20 and 28 here instead of 8 and 24)."""
    x0 = wp.array([1.0, 3.0], dtype=wp.float64, requires_grad=True)
    x = wp.array([5.0, 7.0], dtype=wp.float64, requires_grad=True)
    y = wp.zeros(2, dtype=wp.float64, requires_grad=True)
    _launch_and_back(write_then_read, [x0, x, y], y)
    np.testing.assert_allclose(y.numpy(), [4.0, 36.0])
    np.testing.assert_allclose(x0.grad.numpy(), [8.0, 24.0])   # d (2 x0)^2


def test_reads_of_earlier_iterations_writes_replay_exactly():
    """A loop reading what its earlier iterations wrote to the array (weft gave 10.6 for 15.6
    here before stop 47): the adjoint undoes each iteration's stores before recomputing it."""
    x0 = np.array([1.1, 0.9])
    x, loss = _run(square_thrice, x0, times=2)
    np.testing.assert_allclose(loss.numpy()[0], (x0 ** 64).sum())
    np.testing.assert_allclose(x.grad.numpy(), 64 * x0 ** 63, rtol=1e-12)


@wp.kernel
def accumulate_down_tree(parent: wp.array(dtype=int), x: wp.array2d(dtype=wp.vec3d)):
    w = wp.tid()
    for b in range(x.shape[1]):
        p = parent[b]
        if p >= 0:  # reads its own old value and its parent's new one
            x[w, b] = x[w, b] + wp.cw_mul(x[w, p], x[w, b])


@wp.kernel
def vec_loss(x: wp.array2d(dtype=wp.vec3d), loss: wp.array(dtype=wp.float64)):
    w, b = wp.tid()
    wp.atomic_add(loss, 0, wp.dot(x[w, b], wp.vec3d(1.0, 2.0, 3.0)))


def test_vectors_in_place_down_a_tree_per_world():
    """MuJoCo Warp's pattern: one thread per world walks the bodies, parents first, updating
    each body from its old value and its parent's new one (both copies would be wrong);
    checked against central differences, launched twice in place."""
    parent = np.array([-1, 0, 1, 1], dtype=np.int32)
    x0 = np.random.default_rng(3).uniform(0.5, 1.5, (2, 4, 3))

    def f(a):
        a = a.copy()
        for _ in range(2):
            for w in range(2):
                for b in range(4):
                    if parent[b] >= 0:
                        a[w, b] = a[w, b] + a[w, parent[b]] * a[w, b]
        return float((a * [1.0, 2.0, 3.0]).sum())

    x = wp.array(x0, dtype=wp.vec3d, requires_grad=True)
    loss = wp.zeros(1, dtype=wp.float64, requires_grad=True)
    tape = wp.Tape()
    with tape:
        for _ in range(2):
            wp.launch(accumulate_down_tree, 2, inputs=[wp.array(parent), x])
        wp.launch(vec_loss, (2, 4), inputs=[x, loss])
    tape.backward(loss)
    np.testing.assert_allclose(loss.numpy()[0], f(x0))
    fd = np.zeros_like(x0)
    for k in np.ndindex(*x0.shape):
        e = np.zeros_like(x0)
        e[k] = 1e-6
        fd[k] = (f(x0 + e) - f(x0 - e)) / 2e-6
    np.testing.assert_allclose(x.grad.numpy(), fd, rtol=1e-6)


@wp.kernel
def take_next(count: wp.array(dtype=int), x: wp.array(dtype=wp.float64),
              y: wp.array(dtype=wp.float64)):
    i = wp.tid()
    n = count[i]
    count[i] = n + 1
    y[i] = x[n] * x[n]


def test_integer_arrays_read_then_overwritten_are_replayed_as_read():
    """An index read from an integer array the kernel then overwrites: the replay read the new
    index (a silently wrong gradient, [0, 4, 6] here, before stop 47)."""
    count = wp.array(np.array([0, 1], dtype=np.int32))
    x = wp.array(np.array([1.0, 2.0, 3.0]), dtype=wp.float64, requires_grad=True)
    y = wp.zeros(2, dtype=wp.float64, requires_grad=True)
    _launch_and_back(take_next, [count, x, y], y)
    np.testing.assert_array_equal(count.numpy(), [1, 2])
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 4.0, 0.0])


@wp.kernel
def read_then_accumulate(x: wp.array(dtype=wp.float64), s: wp.array(dtype=wp.float64)):
    i = wp.tid()
    for j in range(x.shape[0]):  # every thread reads every element...
        s[i] = s[i] + x[j] * x[j]
    for j in range(x.shape[0]):
        x[j] += s[i] * wp.float64(0.1)  # ...then adds into all of them (an atomic add)


def test_reads_then_atomic_adds_at_other_threads_elements_replay_exactly():
    """MuJoCo Warp's line search reads ``Ma`` and later adds into it (``Ma[w, d] += ...``, an
    atomic add): the replay performs the adds into a copy and the reverse sweep undoes them."""
    x0 = np.array([0.5, -1.0, 2.0])

    def f(a):
        s = np.array([(a * a).sum()])
        return (a + 0.1 * s.sum()).sum() + s.sum()

    x = wp.array(x0, dtype=wp.float64, requires_grad=True)
    s = wp.zeros(1, dtype=wp.float64, requires_grad=True)
    loss = wp.zeros(1, dtype=wp.float64, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(read_then_accumulate, 1, inputs=[x, s])
        wp.launch(total, 3, inputs=[x, loss])
        wp.launch(total, 1, inputs=[s, loss])
    tape.backward(loss)
    np.testing.assert_allclose(loss.numpy()[0], f(x0))
    fd = [(f(x0 + 1e-6 * e) - f(x0 - 1e-6 * e)) / 2e-6 for e in np.eye(3)]
    np.testing.assert_allclose(x.grad.numpy(), fd, rtol=1e-6)


def test_hvp_through_replayed_stores_matches_differences_of_the_gradient():
    """``tape.hvp`` differentiates the adjoint's source once more, undo stacks included, so a
    tree walk in place (reads of what the launch wrote at other threads' elements... here the
    same thread's earlier bodies) and a loop over its own writes have exact Hessian-vector
    products: checked against central differences of the analytic gradient."""
    parent = np.array([-1, 0, 1, 1], dtype=np.int32)
    x0 = np.random.default_rng(5).uniform(0.5, 1.5, (1, 4, 3))
    v = np.random.default_rng(6).uniform(-1.0, 1.0, x0.shape)

    def grad(a0):  # reverse mode by hand of the walk and the weighted sum
        a, tape_ = a0.copy(), []
        for b in range(4):
            p = parent[b]
            if p >= 0:
                tape_.append((b, p, a[0, b].copy(), a[0, p].copy()))
                a[0, b] = a[0, b] + a[0, p] * a[0, b]
        g = np.zeros_like(a0)
        g[0] = [1.0, 2.0, 3.0]
        for b, p, ab, ap in reversed(tape_):
            gb = g[0, b].copy()
            g[0, b] = gb * (1.0 + ap)
            g[0, p] = g[0, p] + gb * ab
        return g

    x = wp.array(x0, dtype=wp.vec3d, requires_grad=True)
    loss = wp.zeros(1, dtype=wp.float64, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(accumulate_down_tree, 1, inputs=[wp.array(parent), x])
        wp.launch(vec_loss, (1, 4), inputs=[x, loss])
    hv = tape.hvp(loss, {x: v})[x].numpy()
    h = 1e-6
    fd = (grad(x0 + h * v) - grad(x0 - h * v)) / (2 * h)
    np.testing.assert_allclose(hv, fd, rtol=1e-6, atol=1e-9)

    xs = np.array([1.1, 0.9])                       # the loop squares x three times: x^8
    x = wp.array(xs, dtype=wp.float64, requires_grad=True)
    loss = wp.zeros(1, dtype=wp.float64, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(square_thrice, 2, inputs=[x])
        wp.launch(total, 2, inputs=[x, loss])
    u = np.array([1.0, -2.0])
    hv = tape.hvp(loss, {x: u})[x].numpy()
    np.testing.assert_allclose(hv, 56 * xs ** 6 * u, rtol=1e-12)
