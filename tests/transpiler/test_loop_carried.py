"""Values a loop carries that issue 33 found missing: names first bound inside a loop body and
read after the loop (``for ...: d = sdf(p)`` then ``if d < eps``, as Warp's raymarch example),
and tuple values carried through ``while`` and ``for`` loops (Warp's work-queue example).
Forward values against NumPy, adjoint and tangent against float64 central differences
(:mod:`tests.gradcheck`)."""
import numpy as np

import weft as wp
from tests.gradcheck import Arr, check

F64 = wp.float64


@wp.struct
class Hit:
    dist: wp.float64
    normal: wp.vec3d


@wp.kernel
def bound_in_for(a: wp.array(dtype=wp.float64), n: wp.array(dtype=int),
                 out: wp.array(dtype=wp.float64), outv: wp.array(dtype=wp.vec3d),
                 outm: wp.array(dtype=wp.mat22d)):
    i = wp.tid()
    x = a[i]
    for j in range(n[i]):
        x = x * F64(1.25) + F64(0.1)
        if j == 1:
            continue  # d, v, m, h keep the values of iteration 0
        d = wp.sin(x) * F64(j + 1)
        v = wp.vec3d(d, x * d, x)
        m = wp.mat22d(d, x, x * d, F64(1.0))
        h = Hit()
        h.dist = d * d
        h.normal = v * x
        if x > F64(2.0):
            break
    out[i] = d + h.dist
    outv[i] = v + h.normal
    outm[i] = m


def _bound_in_for(a, n):
    out, outv, outm = np.zeros(len(a)), np.zeros((len(a), 3)), np.zeros((len(a), 2, 2))
    for i in range(len(a)):
        x, d, v, m, hd, hn = a[i], 0.0, np.zeros(3), np.zeros((2, 2)), 0.0, np.zeros(3)
        for j in range(int(n[i])):
            x = x * 1.25 + 0.1
            if j == 1:
                continue
            d = np.sin(x) * (j + 1)
            v = np.array([d, x * d, x])
            m = np.array([[d, x], [x * d, 1.0]])
            hd, hn = d * d, v * x
            if x > 2.0:
                break
        out[i], outv[i], outm[i] = d + hd, v + hn, m
    return out, outv, outm


def test_names_first_bound_in_a_for_loop_are_read_after_it():
    # n = 0: zeros; n = 2: iteration 1 continues before binding; a = 1.0 breaks at j = 2
    a = np.array([0.3, 0.5, 0.9, 0.2, 1.0])
    n = np.array([0, 1, 2, 4, 6], dtype=np.int32)
    out = check(bound_in_for, 5, [Arr(a, F64), Arr(n, wp.int32, grad=False)],
                [Arr(np.zeros(5), F64), Arr(np.zeros((5, 3)), wp.vec3d),
                 Arr(np.zeros((5, 2, 2)), wp.mat22d)], _bound_in_for)
    assert out[0][0] == 0.0 and not out[1][0].any() and not out[2][0].any()


@wp.kernel
def bound_in_while(a: wp.array(dtype=wp.float64), out: wp.array(dtype=wp.float64)):
    i = wp.tid()
    x = a[i]
    k = int(0)
    while x < F64(3.0):
        for j in range(k):  # no iteration while k is 0: e keeps the previous one's value
            e = x * F64(j + 1)
            if e > F64(4.0):
                break
        y = wp.cos(x)
        x = x * F64(1.5) + F64(0.25)
        k = k + 1
    out[i] = e + y * x + F64(k)


def _bound_in_while(a):
    out = np.zeros(len(a))
    for i in range(len(a)):
        x, k, e, y = a[i], 0, 0.0, 0.0
        while x < 3.0:
            for j in range(k):
                e = x * (j + 1)
                if e > 4.0:
                    break
            y = np.cos(x)
            x = x * 1.5 + 0.25
            k += 1
        out[i] = e + y * x + k
    return out


def test_names_first_bound_in_while_and_nested_loops_are_read_after_them():
    # 3.5: no iteration (e = y = 0); 2.0: one (the inner loop runs none); 0.4, 1.1: several,
    # the inner loop breaking
    a = np.array([3.5, 2.0, 0.4, 1.1])
    out = check(bound_in_while, 4, [Arr(a, F64)], [Arr(np.zeros(4), F64)], _bound_in_while)
    assert out[0][0] == 0.0  # e = y = 0 and k = 0


@wp.kernel
def bound_in_each_loop(a: wp.array(dtype=wp.float64), out: wp.array(dtype=wp.float64)):
    i = wp.tid()
    for j in range(3):
        d = a[i] * F64(j)
        out[i] += d
    for j in range(2):  # d is bound again before any read: the first loop need not carry it
        d = a[i] + F64(j)
        out[i] += d


def test_a_name_rebound_before_any_read_after_the_loop_is_not_carried():
    assert "_stk" not in bound_in_each_loop.source("adjoint")


@wp.func
def advance(x: wp.float64, v: wp.vec2d, k: int):
    return x + F64(0.5) * wp.dot(v, v), v * F64(0.9) + wp.vec2d(x, F64(0.1)), k + 1


@wp.kernel
def tuple_state(a: wp.array(dtype=wp.float64), out: wp.array(dtype=wp.float64),
                outv: wp.array(dtype=wp.vec2d)):
    i = wp.tid()
    s = advance(a[i], wp.vec2d(a[i], F64(1.0)), 0)
    while s[2] < 3:  # a name bound to a tuple, carried by a while loop
        s = advance(s[0] * F64(0.5), s[1], s[2])
    x, v, k = s
    for j in range(2):  # its elements, carried by a for loop
        x, v, k = advance(x, v, k)
        last = advance(x * F64(0.25), v, j)  # a tuple first bound in the loop
    out[i] = x + last[0] + F64(k + last[2])
    outv[i] = v + last[1]


def _advance(x, v, k):
    return x + 0.5 * (v @ v), v * 0.9 + np.array([x, 0.1]), k + 1


def _tuple_state(a):
    out, outv = np.zeros(len(a)), np.zeros((len(a), 2))
    for i in range(len(a)):
        s = _advance(a[i], np.array([a[i], 1.0]), 0)
        while s[2] < 3:
            s = _advance(s[0] * 0.5, s[1], s[2])
        x, v, k = s
        for j in range(2):
            x, v, k = _advance(x, v, k)
            last = _advance(x * 0.25, v, j)
        out[i], outv[i] = x + last[0] + k + last[2], v + last[1]
    return out, outv


def test_tuples_carried_through_while_and_for_loops():
    a = np.array([0.2, -0.4, 0.7])
    check(tuple_state, 3, [Arr(a, F64)], [Arr(np.zeros(3), F64), Arr(np.zeros((3, 2)), wp.vec2d)],
          _tuple_state)


# Warp's core/example_work_queue.py (its funcs verbatim): ``dequeue`` returns a tuple from
# inside ``while True``, so the loop carries a tuple out of it
@wp.func
def volatile_read(ptr: wp.array(dtype=int), index: int):
    value = wp.atomic_add(ptr, index, 0)
    return value


@wp.struct
class WorkQueue:
    buffer: wp.array(dtype=int)
    capacity: int
    head: wp.array(dtype=int)
    tail: wp.array(dtype=int)


@wp.func
def enqueue(queue: WorkQueue, item: int) -> bool:
    while True:
        current_tail = volatile_read(queue.tail, 0)
        current_head = volatile_read(queue.head, 0)
        if (current_tail - current_head) >= queue.capacity:
            return False
        index = current_tail % queue.capacity
        if wp.atomic_cas(queue.tail, 0, current_tail, current_tail + 1) == current_tail:
            queue.buffer[index] = item
            return True


@wp.func
def dequeue(queue: WorkQueue) -> tuple[bool, int]:
    while True:
        current_head = volatile_read(queue.head, 0)
        current_tail = volatile_read(queue.tail, 0)
        if current_head >= current_tail:
            return False, 0
        index = current_head % queue.capacity
        item = queue.buffer[index]
        if wp.atomic_cas(queue.head, 0, current_head, current_head + 1) == current_head:
            return True, item


@wp.kernel
def process_queue(queue: WorkQueue, processed: wp.array(dtype=int), failed: wp.array(dtype=int)):
    counter = int(0)
    while True:
        success, item = dequeue(queue)
        if not success:
            break
        if item < 1000000:
            wp.atomic_add(processed, 0, 1)
            if not enqueue(queue, item + 1000000):
                wp.atomic_add(failed, 0, 1)
        else:
            wp.atomic_add(processed, 1, 1)
        counter = counter + 1
    wp.atomic_add(processed, 2, counter)


def test_warps_work_queue_example():
    # as the example, but with a buffer of the queue's capacity (the example's holds 4096 items,
    # so its enqueues store out of bounds: Warp crashes on the CPU, weft's debug mode says so),
    # and fewer threads than wp.config.serial_threshold, so that the launch runs serially (the
    # example's queue lets a dequeue read a slot before the enqueue that claimed it stores)
    capacity = 8192
    buffer = np.zeros(capacity, dtype=np.int32)
    buffer[:4096] = np.arange(4096)
    queue = WorkQueue()
    queue.capacity = capacity
    queue.head = wp.array([0], dtype=int)
    queue.tail = wp.array([4096], dtype=int)
    queue.buffer = wp.array(buffer, dtype=int)
    processed = wp.zeros(3, dtype=int)
    failed = wp.zeros(1, dtype=int)
    wp.launch(process_queue, dim=64, inputs=[queue, processed, failed])
    # every item is processed once and comes back once as item + 1000000, processed once too
    out = queue.buffer.numpy()
    np.testing.assert_array_equal(out[:4096], np.arange(4096))
    np.testing.assert_array_equal(out[4096:], np.arange(4096) + 1000000)
    assert queue.head.numpy()[0] == queue.tail.numpy()[0] == 8192
    assert processed.numpy().tolist() == [4096, 4096, 8192]
    assert failed.numpy()[0] == 0


LIVENESS = [  # (a function body, whether d is live after the first loop that binds it)
    ("for i in range(3):\n    d = i\nx = d", True),
    ("for i in range(3):\n    d = i\n    y = d\nfor j in range(2):\n    d = j\n    z = d", False),
    ("for i in range(3):\n    d = i\nfor j in range(2):\n    d = j\nz = d", True),
    ("for i in range(3):\n    d = i\nif c:\n    d = 5\nz = d", True),
    ("for i in range(3):\n    d = i\nif c:\n    d = 5\nelse:\n    d = 6\nz = d", False),
    ("for i in range(3):\n    d = i\nd = d + 1", True),
    ("for k in range(3):\n    for i in range(3):\n        d = i\n    w = d", True),
    ("for k in range(3):\n    w = d\n    for i in range(3):\n        d = i", True),
    ("for k in range(3):\n    if c:\n        w = d\n    else:\n        for i in range(3):\n"
     "            d = i", True),
    ("for k in range(3):\n    for i in range(3):\n        d = i\n        w = d", False),
    ("while x < 3:\n    for i in range(3):\n        d = i\n    x = x + 1", False),
]


def test_liveness_after_a_loop():
    import ast
    import types

    from weft.transpiler.lowering.astscan import live_after
    for body, want in LIVENESS:
        tree = ast.parse("def f():\n" + "".join("    " + ln + "\n" for ln in body.split("\n")))
        fn = tree.body[0]
        loop = next(n for n in ast.walk(fn) if isinstance(n, (ast.For, ast.While)) and any(
            isinstance(t, ast.Assign) and t.targets[0].id == "d" for t in n.body))
        ctx = types.SimpleNamespace(src=types.SimpleNamespace(tree=fn))
        assert live_after(ctx, loop, "d") is want, body


def test_liveness_of_a_long_loop_body_is_one_walk():
    # which names a loop body binds are read before bound, or after the loop, is found for all
    # the body's names in one walk: a walk per name made a body of N assignments quadratic
    # (the loop kernel of bench_compile_scaling: 146 s to transpile at 3,000 statements)
    import ast
    import types

    from weft.transpiler.lowering import astscan, loop_locals

    def nodes_walked(n):
        body = "".join(f"        y_{k} = x * {k}.0 + 1.0\n" for k in range(n))
        tree = ast.parse(f"def f(x):\n    for j in range(3):\n{body}        x = y_0\n"
                         "    return x\n")
        fn, loop = tree.body[0], tree.body[0].body[0]
        ctx = types.SimpleNamespace(src=types.SimpleNamespace(tree=fn))
        seen = [0]
        walk = ast.walk

        def counting(node):
            for x in walk(node):
                seen[0] += 1
                yield x
        astscan.ast.walk = counting
        try:
            names = [f"y_{k}" for k in range(n)] + ["x"]
            early = loop_locals._first_uses(loop.body, names, {})
            live = astscan.live_after_many(ctx, loop, names)
        finally:
            astscan.ast.walk = walk
        assert early == {f"y_{k}": False for k in range(n)} | {"x": True}
        assert live == {"x"}
        return seen[0]
    assert nodes_walked(400) < 5 * nodes_walked(100)  # linear: 4x (a walk per name: 16x)


@wp.kernel
def cached_in_loop(a: wp.array(dtype=wp.float64), out: wp.array(dtype=wp.float64)):
    # MuJoCo Warp's constraint kernels: values (and tiles) first bound in a branch taken on
    # some iterations only, read on every iteration: the others read what an earlier one bound
    i = wp.tid()
    prev = int(-1)
    for k in range(5):
        key = k // 2
        if key != prev:
            prev = key
            c = a[i] * wp.float64(key + 1)
            t = wp.tile_full(shape=(2,), value=c * c, dtype=wp.float64)
        out[i * 5 + k] = c + t[1] * wp.float64(k)


def cached_in_loop_reference(a):
    out = []
    for x in a:
        for k in range(5):
            c = x * (k // 2 + 1)
            out.append(c + c * c * k)
    return np.array(out)


def test_names_first_bound_on_some_iterations_keep_their_value():
    check(cached_in_loop, 2, [Arr(np.array([0.3, -1.2]), F64)], [Arr(np.zeros(10), F64)],
          reference=cached_in_loop_reference, second_order=False)
