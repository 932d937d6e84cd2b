"""Pass ``tile_views``: a tile load nothing can write over while the tile lives reads its array
in place (``_wk.tile_viewN``); every other load still copies. Checked on kernels (values and
gradients against NumPy, with a launch passing one array as two parameters), on the pass's
rule directly (generated-code text, nothing compiled), and on the helpers a view may feed
(``weft.native.tiles.FRESH``: their results never share memory with their arguments)."""
import ast
import re
import textwrap

import numpy as np
import pytest

import weft as wp
from weft.native import simd, tiles
from weft.transpiler import tile_views

W = wp.constant(8)


@wp.kernel
def row_sums(v: wp.array2d(dtype=float), s: wp.array(dtype=float)):
    i, _lane = wp.tid()
    t = wp.tile_load(v[i], shape=W)
    wp.tile_store(s, wp.tile_sum(t * 2.0), offset=i)


@wp.kernel
def block_product(a: wp.array3d(dtype=float), b: wp.array3d(dtype=float),
                  c: wp.array3d(dtype=float)):
    i, _lane = wp.tid()
    x = wp.tile_load(a[i], shape=(4, 4))
    y = wp.tile_load(b[i], shape=(4, 4))
    wp.tile_store(c[i], wp.tile_matmul(x, y))


@wp.kernel
def stored_between(a: wp.array(dtype=float), b: wp.array(dtype=float)):
    _i, _lane = wp.tid()
    t = wp.tile_load(a, shape=W, offset=1)
    wp.tile_store(b, wp.tile_zeros(shape=W, dtype=float))   # written while t lives
    wp.tile_store(b, t * 1.0, offset=0)


@wp.kernel
def stored_directly(a: wp.array(dtype=float), b: wp.array(dtype=float)):
    _i, _lane = wp.tid()
    t = wp.tile_load(a, shape=W)
    wp.tile_store(b, t, offset=1)                             # the store reads t itself


@wp.kernel
def reductions(v: wp.array2d(dtype=float), s: wp.array(dtype=float),
               hi: wp.array(dtype=float), lo: wp.array(dtype=float)):
    i, _lane = wp.tid()
    t = wp.tile_load(v[i], shape=W)
    wp.tile_store(s, wp.tile_sum(t), offset=2 * i)      # offsets past the end are skipped
    hi[i] = wp.tile_max(t)[0]
    lo[i] = wp.tile_min(t)[0] * 3.0


def _launch(kernel, n, *args):
    wp.launch_tiled(kernel, dim=[n], inputs=list(args), block_dim=1, device="cpu")
    wp.synchronize()


def test_read_only_loads_are_views_with_numpys_values_and_gradients():
    assert "_wk.tile_view1(" in row_sums.source("forward")
    assert "_wk.tile_view1(" in row_sums.source("adjoint")   # the replay's load too
    v = np.random.default_rng(0).random((5, 8), dtype=np.float32)
    V = wp.array(v, requires_grad=True)
    S = wp.zeros(5, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        _launch(row_sums, 5, V, S)
    np.testing.assert_allclose(S.numpy(), 2.0 * v.sum(axis=1), rtol=1e-6)
    g = np.arange(1, 6, dtype=np.float32)
    tape.backward(grads={S: wp.array(g)})
    np.testing.assert_array_equal(V.grad.numpy(), np.repeat(2.0 * g[:, None], 8, axis=1))
    np.testing.assert_array_equal(V.numpy(), v)   # the view left the array as it was


def test_padded_and_strided_loads_fall_back_to_the_copy():
    # 6 columns under a tile of 8: the region overhangs, so the view helper pads with zeros
    v = np.random.default_rng(1).random((4, 6), dtype=np.float32)
    S = wp.zeros(4, dtype=float)
    _launch(row_sums, 4, wp.array(v), S)
    np.testing.assert_allclose(S.numpy(), 2.0 * v.sum(axis=1), rtol=1e-6)
    # rows of a strided array (every other column): Numba types it non-contiguous, and the
    # helper copies
    wide = np.random.default_rng(2).random((4, 16), dtype=np.float32)
    S2 = wp.zeros(4, dtype=float)
    _launch(row_sums, 4, wp.array(wide)[:, ::2], S2)
    np.testing.assert_allclose(S2.numpy(), 2.0 * wide[:, ::2].sum(axis=1), rtol=1e-6)
    part = wp.array(wide)[:, 3:11]                            # a view with row stride 16
    S3 = wp.zeros(4, dtype=float)
    _launch(row_sums, 4, part, S3)
    np.testing.assert_allclose(S3.numpy(), 2.0 * wide[:, 3:11].sum(axis=1), rtol=1e-6)


def test_two_dimensional_views_multiply_like_numpy():
    assert block_product.source("forward").count("_wk.tile_view2(") == 2
    r = np.random.default_rng(3)
    a, b = r.random((3, 4, 4), dtype=np.float32), r.random((3, 4, 4), dtype=np.float32)
    C = wp.zeros((3, 4, 4), dtype=float)
    _launch(block_product, 3, wp.array(a), wp.array(b), C)
    np.testing.assert_allclose(C.numpy(), a @ b, rtol=1e-5)


@pytest.mark.parametrize("kernel", [stored_between, stored_directly])
def test_a_load_written_over_while_it_lives_stays_a_copy(kernel):
    src = kernel.source("forward")
    assert "_wk.tile_view" not in src and "_wk.tile_load1(" in src
    x = np.arange(1, 11, dtype=np.float32)
    both = wp.array(x)                       # one array passed as both parameters
    _launch(kernel, 1, both, both)
    want = x.copy()
    if kernel is stored_between:
        want[:8] = x[1:9]
    else:
        want[1:9] = x[:8]
    np.testing.assert_array_equal(both.numpy(), want)


def test_reductions_only_stored_or_read_are_scalars_with_numpys_values_and_gradients():
    src = reductions.source("forward")
    for helper in ("tile_sum_scalar", "tile_store_one", "tile_max_scalar", "tile_min_scalar"):
        assert f"_wk.{helper}(" in src, helper
    assert "_wk.tile_sum(" not in src and "_wk.tile_store1(" not in src
    v = np.random.default_rng(5).standard_normal((5, 8)).astype(np.float32)
    V = wp.array(v, requires_grad=True)
    S = wp.zeros(7, dtype=float, requires_grad=True)  # blocks 4 and 5 store past the end
    hi, lo = wp.zeros(5, dtype=float), wp.zeros(5, dtype=float)
    tape = wp.Tape()
    with tape:
        _launch(reductions, 5, V, S, hi, lo)
    want = np.zeros(7, np.float32)
    want[0:7:2] = v[:4].astype(np.float64).sum(axis=1)
    np.testing.assert_allclose(S.numpy(), want, rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(hi.numpy(), v.max(axis=1))
    np.testing.assert_array_equal(lo.numpy(), v.min(axis=1) * np.float32(3.0))
    g = np.arange(1, 8, dtype=np.float32)
    tape.backward(grads={S: wp.array(g)})
    want_grad = np.zeros((5, 8), np.float32)
    want_grad[:4] = g[0:7:2, None]       # d s[2i] / d v[i, :] = 1; block 4's store was skipped
    np.testing.assert_array_equal(V.grad.numpy(), want_grad)


def _sum_in_weft_order(x):
    """``tile_sum``'s order (docs/tiles.md), one scalar addition at a time in ``x``'s dtype:
    32 running sums over the full blocks of 32 (element k into sum k % 32), then lane l plus
    lane l + 16, halving to one lane, then the rest in order; under 32 elements, in order."""
    T = x.dtype.type
    n = x.shape[0]
    m = n - n % 32
    total = T(0)
    if m:
        lanes = [T(0)] * 32
        for k in range(m):
            lanes[k % 32] = T(lanes[k % 32] + x[k]) if k >= 32 else x[k]
        w = 32
        while w > 1:
            w //= 2
            lanes = [T(lanes[l] + lanes[l + w]) for l in range(w)]
        total = lanes[0]
    for k in range(m, n):
        total = T(total + x[k])
    return total


def test_tile_sum_is_thirty_two_running_sums_added_pairwise():
    """The order ``tile_sum`` adds in, against the same order written one scalar addition at a
    time, for lengths around the 32 lanes, float32 and float64, a 2-D tile and a strided view
    (summed in the order of its elements); integers exactly."""
    r = np.random.default_rng(6)
    for dtype in (np.float32, np.float64):
        for n in (1, 5, 13, 31, 32, 33, 64, 95, 257):
            x = r.standard_normal(n).astype(dtype)
            total = _sum_in_weft_order(x)
            assert tiles.tile_sum_scalar(x) == total, (dtype, n)
            assert tiles.tile_sum(x)[0] == total, (dtype, n)
            assert simd.sum_flat(x) == total, (dtype, n)  # uncompiled: the same bits
    x = r.standard_normal((8, 12)).astype(np.float32)
    assert tiles.tile_sum_scalar(x) == _sum_in_weft_order(x.reshape(-1))
    y = r.standard_normal(200).astype(np.float32)[::3]  # 67 elements, stride 3
    assert tiles.tile_sum_scalar(y) == _sum_in_weft_order(np.ascontiguousarray(y))
    i = r.integers(-1000, 1000, 77).astype(np.int32)
    assert tiles.tile_sum_scalar(i) == i.sum()


# --------------------------------------------------------------------- the rule on text

def _decide(body):
    """The loads the pass makes views of, in a generated-code function of ``body``."""
    fdef = ast.parse("def f(a, b, i):\n" + textwrap.indent(textwrap.dedent(body), "    ")).body[0]
    tile_views.views(fdef, tile_views._fresh())
    return [c.func.attr for c in ast.walk(fdef) if isinstance(c, ast.Call)
            and isinstance(c.func, ast.Attribute) and c.func.attr.startswith("tile_")
            and re.fullmatch(r"tile_(view|load)\d", c.func.attr)]


@pytest.mark.parametrize("body, want", [
    # read by a reduction and an operator, then stored: a view
    ("t = _wk.tile_load1(a, i, 8)\nu = _wk.tile_sum(t * t)\n_wk.tile_store1(b, i, u)",
     ["tile_view1"]),
    # a loop's body: the load and its reads in one iteration
    ("for k in range(3):\n    t = _wk.tile_load1(a, k, 8)\n    u = _wk.tile_sum(t)",
     ["tile_view1"]),
    # another name for the tile
    ("t = _wk.tile_load1(a, i, 8)\nu = t\nv = _wk.tile_sum(u)", ["tile_load1"]),
    # returned
    ("t = _wk.tile_load1(a, i, 8)\nreturn t", ["tile_load1"]),
    # an element assigned while it lives
    ("t = _wk.tile_load1(a, i, 8)\nb[0] = 1.0\nu = _wk.tile_sum(t)", ["tile_load1"]),
    # a call of another generated function (it may write arrays) while it lives
    ("t = _wk.tile_load1(a, i, 8)\nhelper(b)\nu = _wk.tile_sum(t)", ["tile_load1"]),
    # an adjoint's add into an array while it lives
    ("t = _wk.tile_load1(a, i, 8)\n_wk.tile_load_adj1(b, i, t * 1.0)\nu = _wk.tile_sum(t)",
     ["tile_load1"]),
    # written after its last read: a view
    ("t = _wk.tile_load1(a, i, 8)\nu = _wk.tile_sum(t)\n_wk.tile_store1(a, i, u)",
     ["tile_view1"]),
    # a helper whose result may be a view of its argument (transpose)
    ("t = _wk.tile_load2(a, i, 0, 1, 8)\nu = _wk.tile_transpose(t)\nv = _wk.tile_sum(u)",
     ["tile_load2"]),
    # assigned twice
    ("t = _wk.tile_load1(a, i, 8)\nu = _wk.tile_sum(t)\nt = _wk.tile_load1(b, i, 8)",
     ["tile_load1", "tile_load1"]),
    # the element loops of tile arithmetic: read through a reshape, one element at a time,
    # written into a new array
    ("t = _wk.tile_load1(a, i, 8)\nm = np.zeros((8,), np.float32)\nf = m.reshape(8)\n"
     "g = t.reshape(8)\nfor e in range(8):\n    f[e] = g[e] * 2.0\nu = _wk.tile_sum(m)",
     ["tile_view1"]),
    # ... but not when the reshaped name is written, or its rows (shape unknown) read
    ("t = _wk.tile_load1(a, i, 8)\ng = t.reshape(8)\ng[0] = 1.0\nu = _wk.tile_sum(t)",
     ["tile_load1"]),
    ("t = _wk.tile_load2(a, i, 0, 2, 4)\ng = t.reshape(s)\nr = g[0]\nu = _wk.tile_sum(r)",
     ["tile_load2"]),
    # read in a nested block after the load, nothing written: a view
    ("t = _wk.tile_load1(a, i, 8)\nif i > 0:\n    u = _wk.tile_sum(t)", ["tile_view1"]),
    # read before the load (a loop's earlier iteration would see the later one's view)
    ("for k in range(3):\n    u = _wk.tile_sum(t)\n    t = _wk.tile_load1(a, k, 8)",
     ["tile_load1"]),
])
def test_the_rule(body, want):
    assert _decide(body) == want


def _scalars(body):
    fdef = ast.parse("def f(a, b, i):\n" + textwrap.indent(textwrap.dedent(body), "    ")).body[0]
    tile_views.scalars(fdef)
    return ast.unparse(fdef).split("\n", 1)[1]


def test_the_scalar_rule():
    assert _scalars("r = _wk.tile_sum(t)\n_wk.tile_store1(a, i, r)\nx = r[0] + 1.0\n"
                    "y = r[int32(0),]") == "    r = _wk.tile_sum_scalar(t)\n" \
        "    _wk.tile_store_one(a, i, r)\n    x = r + 1.0\n    y = r"
    for body in ("r = _wk.tile_sum(t)\nu = r * 2.0",              # used as a tile
                 "r = _wk.tile_max(t)\ng = _wk.tile_extreme_adj(t, r, h)",
                 "r = _wk.tile_sum(t)\n_wk.tile_store1(a, i, r)\nr = _wk.tile_sum(a)",
                 "r = _wk.tile_sum(t)\nx = r[1]", "r = _wk.tile_sum(t)\nx = r[int32(1),]"):
        assert "_scalar" not in _scalars(body), body


def _products(body):
    fdef = ast.parse("def f(a, b, i):\n" + textwrap.indent(textwrap.dedent(body), "    ")).body[0]
    tile_views.zero_products(fdef)
    return ast.unparse(fdef).split("\n", 1)[1]


def test_the_zero_product_rule():
    """A product into a tile of zeros made for it alone is the product; any other
    accumulator, or any other scaling, keeps the accumulating form."""
    assert _products("c = np.zeros((4, 4), np.float32)\n"
                     "r = _wk.tile_matmul_acc(x, y, c, float32(1.0), float32(1.0))\n"
                     "_wk.tile_store2(a, i, 0, r)") == \
        "    r = _wk.tile_matmul(x, y)\n    _wk.tile_store2(a, i, 0, r)"
    for body in (
            # read again: still needed
            "c = np.zeros((4, 4), np.float32)\nr = _wk.tile_matmul_acc(x, y, c, 1.0, 1.0)\n"
            "u = c + r",
            # a loop's accumulator: zeros only at the first step
            "c = np.zeros((4, 4), np.float32)\nfor k in range(3):\n"
            "    c = _wk.tile_matmul_acc(x, y, c, 1.0, 1.0)",
            # scaled: alpha * p + 0 is not alpha * p at -0
            "c = np.zeros((4, 4), np.float32)\nr = _wk.tile_matmul_acc(x, y, c, -2.0, 1.0)",
            "c = np.zeros((4, 4), np.float32)\nr = _wk.tile_matmul_acc(x, y, c, 1.0, beta)",
            # not zeros
            "c = np.ones((4, 4), np.float32)\nr = _wk.tile_matmul_acc(x, y, c, 1.0, 1.0)",
            "r = _wk.tile_matmul_acc(x, y, b, 1.0, 1.0)"):
        assert "tile_matmul_acc" in _products(body), body


@wp.kernel
def zero_accumulator(a: wp.array3d(dtype=float), b: wp.array3d(dtype=float),
                     c: wp.array3d(dtype=float), d: wp.array3d(dtype=float)):
    i, _lane = wp.tid()
    x = wp.tile_load(a[i], shape=(8, 8))
    y = wp.tile_load(b[i], shape=(8, 8))
    z = wp.tile_zeros(shape=(8, 8), dtype=float)
    wp.tile_matmul(x, y, z)
    wp.tile_store(c[i], z)
    w = wp.tile_zeros(shape=(8, 8), dtype=float)
    wp.tile_store(d[i], w)   # read twice: the accumulating form
    wp.tile_matmul(x, y, w)
    wp.tile_store(d[i], w)


def test_products_into_zeros_keep_their_bits_and_gradients():
    src = zero_accumulator.source("forward")
    assert src.count("_wk.tile_matmul(") == 1 and src.count("_wk.tile_matmul_acc(") == 1
    r = np.random.default_rng(9)
    a = (r.random((5, 8, 8)) - 0.5).astype(np.float32)
    b = (r.random((5, 8, 8)) - 0.5).astype(np.float32)
    b[0] = 0.0  # products of zeros: +0 in both forms
    A, B = wp.array(a, requires_grad=True), wp.array(b, requires_grad=True)
    C = wp.zeros((5, 8, 8), dtype=float, requires_grad=True)
    D = wp.zeros((5, 8, 8), dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch_tiled(zero_accumulator, dim=5, inputs=[A, B, C, D], block_dim=8)
    c, d = C.numpy(), D.numpy()
    np.testing.assert_array_equal(c.view(np.uint32), d.view(np.uint32))
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-6)
    g = r.random((5, 8, 8)).astype(np.float32)
    tape.backward(grads={C: wp.array(g)})
    np.testing.assert_allclose(A.grad.numpy(), g @ b.transpose(0, 2, 1), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(B.grad.numpy(), a.transpose(0, 2, 1) @ g, rtol=1e-5, atol=1e-6)


def test_the_private_tile_add_rule():
    """In a chunk with per-thread copies of ``adj_a`` (``_pv_adj_a``, ``_acc_adj_a``), a tile
    load's gradient add into ``adj_a`` by name is plain for thread 0 and into the copy for the
    others; adds into other arrays, views of it, or in chunks without copies stay atomic."""
    src = ("def f(_lo, _hi, adj_a, adj_b, _pv_adj_a, _acc_adj_a):\n"
           "    _wk.tile_load_adj2(adj_a, int32(0), k, g)\n"
           "    _wk.tile_load_adj1(adj_b, k, h)\n"
           "    _wk.tile_load_adj1(adj_a[0], k, h)\n")
    fdef = ast.parse(src).body[0]
    assert tile_views.private_tile_adds(fdef) == 1
    assert ast.unparse(fdef).split("\n")[1:] == [
        "    if _pv_adj_a and _w == 0:",
        "        _wk.tile_add_plain2(adj_a, int32(0), k, g)",
        "    elif _pv_adj_a and _w <= _acc_adj_a.shape[0]:",
        "        _wk.tile_add_plain2(_acc_adj_a[_w - 1], int32(0), k, g)",
        "    else:",
        "        _wk.tile_load_adj2(adj_a, int32(0), k, g)",
        "    _wk.tile_load_adj1(adj_b, k, h)",
        "    _wk.tile_load_adj1(adj_a[0], k, h)"]
    serial = ast.parse("def f(_dim, adj_a):\n    _wk.tile_load_adj2(adj_a, 0, 0, g)\n").body[0]
    assert tile_views.private_tile_adds(serial) == 0


def test_fresh_helpers_never_return_their_arguments_memory():
    r = np.random.default_rng(4)
    t = r.random((4, 4), dtype=np.float32)
    v3 = r.random((4, 3), dtype=np.float32)
    g1 = np.ones(1, np.float32)
    calls = {
        "tile_sum": (t,), "tile_sum_vec": (v3, 3), "tile_max": (t,), "tile_min": (t,),
        "tile_argmax": (t,), "tile_argmin": (t,), "tile_sum_adj": (t, g1),
        "tile_sum_vec_adj": (v3, np.ones((1, 3), np.float32)),
        "tile_extreme_adj": (t, np.full(1, t.max(), np.float32), g1),
        "tile_insert": (t, (1, 2), 5.0),
        "tile_zero_at": (t, (1, 2)), "tile_onehot": (t, (1, 2), 5.0), "tile_fill": (t, 2.0),
        "tile_reshape": (t, (16,)), "tile_unbroadcast": (t, (1, 4), (4,)),
        "tile_matmul_acc": (t, t, t, np.float32(1), np.float32(1)),
        "tile_matmul_adj_a": (t, t), "tile_matmul_adj_b": (t, t),
        "tile_sum_scalar": (t,), "tile_max_scalar": (t,), "tile_min_scalar": (t,),
    }
    own = {n for n in tiles.FRESH
           if n[5:] not in tiles._tk.TILE_KERNELS or n[5:] in tiles._OWN}
    assert own == set(calls)   # every helper of tiles.py the pass trusts is checked here
    for name, args in calls.items():
        out = getattr(tiles, name)(*args)
        for leaf in (out if isinstance(out, tuple) else (out,)):
            for a in args:
                if isinstance(a, np.ndarray):
                    assert not np.shares_memory(leaf, a), name
    # the numeric cores (tile_kernels) are checked on every call of test_tile_kernels.py


def test_the_pure_function_rule():
    # the module's generated functions that write nothing (and call only pure functions or
    # each other) keep a load a view across their calls; one that writes an array, or calls
    # one that does, does not
    module = ast.parse(textwrap.dedent("""
        def interact(p, q):
            return (q[0] - p[0], np.sqrt(q[1]))
        def via(p, q):
            return interact(p, q)
        def writes(out, q):
            out[0] = q[0]
            return q
        def via_writes(out, q):
            return writes(out, q)
        def prints(q):
            print(q)
            return q
    """)).body
    assert tile_views.pure_functions(module) == {"interact", "via"}
    fdef = ast.parse("def f(a, b, i):\n    t = _wk.tile_load1(a, i, 8)\n"
                     "    for j in range(8):\n        x = via(b, (t[j, 0], t[j, 1]))\n"
                     "    u = _wk.tile_sum(t)").body[0]
    for pure, want in (({"interact", "via"}, "tile_view1"), (set(), "tile_load1")):
        f = ast.parse(ast.unparse(fdef)).body[0]
        for node in ast.walk(f):
            if isinstance(node, ast.Subscript) and getattr(node.value, "id", "") == "t":
                node.weft_element = True   # as tile_extract tags its element reads
        tile_views.views(f, tile_views._fresh(), pure=pure)
        assert want in ast.unparse(f)
    # untagged subscripts of the tile (a row, a slice: a view that could escape) keep the copy
    f = ast.parse(ast.unparse(fdef)).body[0]
    tile_views.views(f, tile_views._fresh(), pure={"interact", "via"})
    assert "tile_load1" in ast.unparse(f)


TB = wp.constant(16)


@wp.func
def pull(p0: wp.vec3, p: wp.vec3):
    r = p - p0
    d = wp.length_sq(r) + 0.01
    inv = 1.0 / wp.sqrt(d)
    return inv * inv * inv * r


@wp.kernel
def nbody(pos: wp.array(dtype=wp.vec3), acc_out: wp.array(dtype=wp.vec3), n: int):
    i = wp.tid()
    p0 = pos[i]
    acc = wp.vec3(0.0)
    for k in range(n / TB):
        t = wp.tile_load(pos, shape=TB, offset=k * TB)   # Warp's example_tile_nbody
        for j in range(TB):
            acc += pull(p0, t[j])
    acc_out[i] = acc


def test_elements_of_a_tile_of_vectors_read_in_place():
    src = nbody.source("forward")
    assert "_wk.tile_view1(pos" in src and "tile_get_vec" not in src
    n = 64
    p = np.random.default_rng(5).random((n, 3)).astype(np.float32)
    out = wp.zeros(n, dtype=wp.vec3)
    wp.launch(nbody, n, inputs=[wp.array(p, dtype=wp.vec3), out, n], block_dim=TB)
    r = p[None, :, :].astype(np.float64) - p[:, None, :]
    inv = 1.0 / np.sqrt((r * r).sum(axis=2) + 0.01)
    np.testing.assert_allclose(out.numpy(), ((inv ** 3)[:, :, None] * r).sum(axis=1),
                               rtol=2e-4, atol=2e-4)
