"""CPU atomics (weft.native.atomics) under parallel launches that collide, and their fallback.

Collisions: 200_000 prange iterations update 7 slots. Every op's returned old values are checked
exactly against what a linearisable history allows (add/sub: each partial sum appears once;
exch: the old values chain the stored ones; min/max: successful updates form a monotone chain;
cas: a CAS-loop counter hands out each count once), with expected results from numpy.
These catch a non-atomic update only where the threads really run at the same time: on a host
whose vCPUs are time-sliced even a plain racy ``a[i % 7] += 1`` prange loses nothing.
"""
import json
import os
import subprocess
import sys
import textwrap

import numba
import numpy as np
import pytest

import weft as wp
from weft.native.atomics import (atomic_add, atomic_cas, atomic_exch, atomic_max, atomic_min,
    atomic_sub)

N = 200_000
SLOTS = 7
DTYPES = [np.float32, np.float64, np.int32, np.int64, np.uint32, np.uint64]
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@numba.njit(parallel=True)
def _all_ops(step, vals, add, sub, lo, hi, xch, cnt, o_add, o_sub, o_min, o_max, o_xch, o_cnt):
    n = vals.shape[0]
    for i in numba.prange(n):
        s = i % add.shape[0]
        o_add[i] = atomic_add(add, s, step)           # step: int64 / float64, cast to dtype
        o_sub[i] = atomic_sub(sub, s, step)
        o_min[i] = atomic_min(lo, s, vals[i])          # descending: every call improves locally
        o_max[i] = atomic_max(hi, s, vals[n - 1 - i])  # ascending
        o_xch[i] = atomic_exch(xch, s, i + 1)
        expected = cnt[s]                              # racy read: the CAS loop corrects it
        while True:
            got = atomic_cas(cnt, s, expected, expected + 1)
            if got == expected:
                break
            expected = got
        o_cnt[i] = expected


def _run_all_ops(dtype, n=N, slots=SLOTS):
    dtype = np.dtype(dtype)
    step = 0.5 if dtype.kind == "f" else 3
    vals = np.arange(n)[::-1].copy()
    if dtype.kind != "u":
        vals -= n // 2
    vals = vals.astype(dtype)
    counts = np.bincount(np.arange(n) % slots, minlength=slots)
    add = np.zeros(slots, dtype)
    sub = (counts * step).astype(dtype)
    lo = np.full(slots, vals.max() // 2, dtype)  # mid-range starts: some calls must not store
    hi = np.full(slots, vals.max() // 2, dtype)
    xch = np.zeros(slots, dtype)
    cnt = np.zeros(slots, dtype)
    olds = [np.empty(n, dtype) for _ in range(6)]
    _all_ops(step, vals, add, sub, lo, hi, xch, cnt, *olds)
    return dict(step=step, vals=vals, counts=counts, add=add, sub=sub, lo=lo, hi=hi, xch=xch,
                cnt=cnt, init=dtype.type(vals.max() // 2), o_add=olds[0], o_sub=olds[1],
                o_min=olds[2], o_max=olds[3], o_xch=olds[4], o_cnt=olds[5])


def _check_chain(olds, vals, init, final, better):
    """min/max history: calls that stored form a monotone chain from ``init`` to ``final``."""
    stored = better(vals, olds)  # a call stored its value iff it beat the old one returned
    assert 0 < stored.sum() < len(vals)
    chain = np.sort(np.concatenate([[init], vals[stored]]))
    np.testing.assert_array_equal(np.sort(np.concatenate([olds[stored], [final]])), chain)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_all_ops_collide_without_losing_updates(dtype):
    r = _run_all_ops(dtype)
    dt, step, vals, counts = np.dtype(dtype), r["step"], r["vals"], r["counts"]
    slot = np.arange(N) % SLOTS
    # add / sub: final values and each partial sum returned exactly once
    np.testing.assert_array_equal(r["add"], (counts * step).astype(dt))
    np.testing.assert_array_equal(r["sub"], np.zeros(SLOTS, dt))
    # min / max against numpy's own reductions
    lo, hi = np.full(SLOTS, r["init"], dt), np.full(SLOTS, r["init"], dt)
    np.minimum.at(lo, slot, vals)
    np.maximum.at(hi, slot, vals[::-1])
    np.testing.assert_array_equal(r["lo"], lo)
    np.testing.assert_array_equal(r["hi"], hi)
    # cas counter and exch: every slot counted, the last exchanged value stays
    np.testing.assert_array_equal(r["cnt"], counts.astype(dt))
    for s in range(SLOTS):
        m = slot == s
        k = np.arange(counts[s])
        np.testing.assert_array_equal(np.sort(r["o_add"][m]), (k * step).astype(dt))
        np.testing.assert_array_equal(np.sort(r["o_sub"][m]), ((k + 1) * step).astype(dt))
        np.testing.assert_array_equal(np.sort(r["o_cnt"][m]), k.astype(dt))
        written = (np.nonzero(m)[0] + 1).astype(dt)
        np.testing.assert_array_equal(np.sort(np.append(r["o_xch"][m], r["xch"][s])),
                                      np.sort(np.append(written, dt.type(0))))
        _check_chain(r["o_min"][m], vals[m], r["init"], r["lo"][s], np.less)
        _check_chain(r["o_max"][m], vals[::-1][m], r["init"], r["hi"][s], np.greater)


@numba.njit(parallel=True)
def _grid(a, n):
    for i in numba.prange(n):
        idx = (np.int32(i % a.shape[0]), np.uint16((i // a.shape[0]) % a.shape[1]))  # mixed ints
        atomic_add(a, idx, 1.0)
        atomic_sub(a, (i % a.shape[0], (i // a.shape[0]) % a.shape[1]), 0.25)


@pytest.mark.parametrize("view", ["C", "strided", "F"])
def test_tuple_index_on_views(view):
    base = np.zeros((6, 8), np.float64)
    view_of = {"C": lambda x: x, "strided": lambda x: x[::-2, 1::3], "F": lambda x: x.T}[view]
    a = view_of(base)
    assert numba.typeof(a).layout == {"C": "C", "strided": "A", "F": "F"}[view]
    n = a.size * 1000
    _grid(a, n)
    np.testing.assert_array_equal(a, np.full(a.shape, 750.0))
    inside = np.zeros(base.shape, bool)
    view_of(inside)[...] = True
    assert inside.sum() == a.size and not base[~inside].any()  # nothing else was written


@numba.njit
def _semantics(f, i32, u32):
    """Single-threaded results of every op on edge cases (compiled and as ``.py_func``)."""
    nan = np.nan
    f[0] = 1.0
    rf = [atomic_min(f, 0, nan), f[0], atomic_max(f, 0, nan), f[0]]  # a NaN value is ignored
    f[0] = nan
    rf += [atomic_min(f, 0, 1.0), atomic_max(f, 0, 1.0)]             # a stored NaN stays
    f[0] = 0.0
    rf += [atomic_min(f, 0, -0.0), np.copysign(1.0, f[0])]           # -0.0 does not replace 0.0
    f[0] = 2.0
    rf += [atomic_min(f, 0, -np.inf), f[0], atomic_max(f, 0, 3), f[0]]
    rf += [atomic_exch(f, 0, 7.5), atomic_cas(f, 0, 7.0, 1.0), f[0],
           atomic_cas(f, 0, 7.5, 1.5), f[0], atomic_sub(f, 0, 0.5), f[0]]
    i32[1] = 5
    ri = [atomic_add(i32, 1, 2.7), i32[1], atomic_sub(i32, 1, -3), i32[1],  # 2.7 -> 2
          atomic_min(i32, 1, -4), atomic_max(i32, 1, np.int64(2) ** 40 + 9), i32[1],  # wraps to 9
          atomic_cas(i32, 1, 8, 1), atomic_cas(i32, 1, 9, 1), i32[1], atomic_exch(i32, 1, 0)]
    u32[0] = 5
    ru = [atomic_sub(u32, 0, 6), u32[0], atomic_add(u32, (0,), 1), u32[0],  # unsigned wrap
          atomic_max(u32, 0, 3), atomic_min(u32, 0, 3), u32[0], atomic_min(u32, 0, -1), u32[0]]
    return rf, ri, ru


def test_semantics_compiled_and_python_agree():
    nan, inf = np.nan, np.inf
    expected = ([1.0, 1.0, 1.0, 1.0, nan, nan, 0.0, 1.0, 2.0, -inf, -inf, 3.0,
                 3.0, 7.5, 7.5, 7.5, 1.5, 1.5, 1.0],
                [5, 7, 7, 10, 10, -4, 9, 9, 9, 1, 1],
                [5, 2 ** 32 - 1, 2 ** 32 - 1, 0, 0, 3, 3, 3, 3])
    for fn in (_semantics, _semantics.py_func):
        args = np.zeros(1), np.zeros(2, np.int32), np.zeros(1, np.uint32)
        got = fn(*args)
        for g, e, a in zip(got, expected, args):
            if fn is _semantics.py_func:  # old values keep the array's dtype
                assert [type(x) for x in g] == [a.dtype.type] * len(e)
            np.testing.assert_array_equal(np.array(g, a.dtype), np.array(e, a.dtype),
                                          err_msg=str(fn))
        np.testing.assert_array_equal(args[0], [1.0])
        np.testing.assert_array_equal(args[1], [0, 0])
    lists = [numba.types.List(numba.typeof(a).dtype) for a in args]
    assert _semantics.nopython_signatures[0].return_type == numba.types.Tuple(lists)


@numba.njit
def _use(a, i):
    return atomic_add(a, i, 1)


def _readonly():
    a = np.zeros(2)
    a.flags.writeable = False
    return a


@pytest.mark.parametrize("args", [(np.zeros((2, 2)), 1), (np.zeros(2), 1.0), (_readonly(), 0),
                                  (np.zeros(2, np.complex128), 1), (np.zeros((2, 2)), (1, 1, 1))],
                         ids=["too-few-indices", "float-index", "readonly", "complex",
                              "too-many-indices"])
def test_unsupported_arguments_do_not_type(args):
    with pytest.raises(numba.core.errors.TypingError, match="atomic_add"):
        _use(*args)


def _subprocess(code, **env):
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                       text=True, env=dict(os.environ, PYTHONPATH=ROOT, **env), cwd=ROOT,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_python_fallback_without_jit_matches_compiled():
    code = """
        import json, numba, numpy as np
        from tests.stdlib import test_atomics as t
        assert numba.config.DISABLE_JIT and not hasattr(t._all_ops, "py_func")
        out = {}
        for dt in t.DTYPES:
            r = t._run_all_ops(dt, n=300, slots=3)
            out[np.dtype(dt).name] = {k: np.asarray(v).tolist() for k, v in r.items()}
        print(json.dumps(out))
    """
    out = json.loads(_subprocess(code, NUMBA_DISABLE_JIT="1"))
    threads = numba.get_num_threads()
    numba.set_num_threads(1)  # one thread runs the prange in order, as the interpreter does
    try:
        compiled = {np.dtype(dt).name: _run_all_ops(dt, n=300, slots=3) for dt in DTYPES}
    finally:
        numba.set_num_threads(threads)
    for name, r in compiled.items():
        for key, value in r.items():  # final states and every returned old value, in order
            np.testing.assert_array_equal(np.array(out[name][key], np.asarray(value).dtype),
                                          value, err_msg=f"{name} {key}")
        np.testing.assert_array_equal(r["o_xch"][3:], np.arange(1, 298))  # serial exch history


def test_cached_kernel_and_boundscheck(tmp_path):
    (tmp_path / "kern.py").write_text(textwrap.dedent("""
        import numba
        from weft.native.atomics import atomic_add, atomic_max
        @numba.njit(parallel=True, error_model="numpy", cache=True)
        def hist(bins, out, top):
            for i in numba.prange(bins.shape[0]):
                atomic_add(out, bins[i], 1)
                atomic_max(top, 0, bins[i] * 0.5)
        @numba.njit(cache=True)
        def one(a, i):  # serial: Numba skips bounds checks inside prange, even its own
            return atomic_add(a, (i, 1), 1)
    """))
    code = f"""
        import sys, numpy as np
        sys.path.insert(0, {str(tmp_path)!r})
        from kern import hist, one
        out, top = np.zeros(4, np.int64), np.zeros(1, np.float32)
        hist(np.array([0, 1, 1, 3] * 1000 + [{{extra}}]), out, top)
        a = np.zeros((3, 2))
        try:
            one(a, {{row}})
        except IndexError:
            print("IndexError", end=" ")
        print(out.tolist(), top[0], a.sum(), len(hist.stats.cache_hits))
    """
    env = {"NUMBA_CACHE_DIR": str(tmp_path / "cache")}
    assert _subprocess(code.format(extra=2, row=2), **env).split() == [
        "[1000,", "2000,", "1,", "1000]", "1.5", "1.0", "0"]
    assert _subprocess(code.format(extra=3, row=0), **env).split() == [
        "[1000,", "2000,", "0,", "1001]", "1.5", "1.0", "1"]  # loaded from the cache
    assert _subprocess(code.format(extra=3, row=3), NUMBA_BOUNDSCHECK="1").split() == [
        "IndexError", "[1000,", "2000,", "0,", "1001]", "1.5", "0.0", "0"]


@wp.kernel
def claim_slots(owner: wp.array(dtype=wp.int32), got: wp.array(dtype=wp.int32)):
    i = wp.tid()
    # every thread tries to claim slot i % 4; exactly one per slot wins (old value -1)
    old = wp.atomic_cas(owner, i % 4, -1, i)
    if old == -1:
        wp.atomic_add(got, i % 4, 1)


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_atomic_cas_in_kernels(device):
    n = 1000
    owner = wp.array(np.full(4, -1, np.int32), dtype=wp.int32, device=device)
    got = wp.zeros(4, dtype=wp.int32, device=device)
    wp.launch(claim_slots, n, inputs=[owner, got], device=device)
    o = owner.numpy()
    np.testing.assert_array_equal(got.numpy(), [1, 1, 1, 1])  # one winner per slot
    assert all(0 <= o[s] < n and o[s] % 4 == s for s in range(4))


@wp.kernel
def bitwise(flags: wp.array(dtype=wp.uint32), masks: wp.array(dtype=wp.int64),
            parity: wp.array(dtype=wp.int32), seen: wp.array(dtype=wp.int64)):
    i = wp.tid()
    wp.atomic_or(flags, i % 3, wp.uint32(1) << wp.uint32(i % 32))
    old = wp.atomic_and(masks, 0, ~(wp.int64(1) << wp.int64(i % 64)))
    wp.atomic_xor(parity, i % 2, 1 << (i % 7))
    # every thread saw a mask still holding its own bit or already cleared: record what it saw
    wp.atomic_add(seen, 0, wp.int64(wp.bit_count(old)))


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_bitwise_atomics_under_collisions(device):
    n = 70_000 if device == "cpu" else 700
    flags = wp.zeros(3, dtype=wp.uint32, device=device)
    masks = wp.array(np.array([-1], np.int64), dtype=wp.int64, device=device)
    parity = wp.zeros(2, dtype=wp.int32, device=device)
    seen = wp.zeros(1, dtype=wp.int64, device=device)
    wp.launch(bitwise, n, inputs=[flags, masks, parity, seen], device=device)
    want_flags = [0, 0, 0]
    want_parity = [0, 0]
    for i in range(n):
        want_flags[i % 3] |= 1 << (i % 32)
        want_parity[i % 2] ^= 1 << (i % 7)
    np.testing.assert_array_equal(flags.numpy(), want_flags)
    np.testing.assert_array_equal(parity.numpy(), want_parity)  # a lost xor flips a bit
    assert masks.numpy()[0] == 0
    # with atomics each clear is seen once: the old values' bit counts are 64, 63, ..., then 0
    # (when bits repeat the count stops falling), whatever order the threads ran in
    olds = seen.numpy()[0]
    assert olds == sum(range(65)), olds


@pytest.mark.parametrize("dtype", [wp.int8, wp.float32])
def test_bitwise_atomics_need_32_or_64_bit_integers(dtype):
    from weft.core.errors import KernelError

    @wp.kernel
    def bad(a: wp.array(dtype=dtype)):
        wp.atomic_or(a, 0, dtype(1))

    with pytest.raises(KernelError, match="needs an array of int32, uint32, int64 or uint64"):
        bad.compiled()


def _float_lock_kernel(dtype):
    @wp.kernel
    def count_under_lock(counter: wp.array(dtype=dtype), lock: wp.array(dtype=dtype),
                         olds: wp.array(dtype=dtype)):
        i = wp.tid()
        # a spin lock on a float array (Warp's test_atomic_cas): 0 free, 1 taken
        while wp.atomic_cas(lock, 0, dtype(0.0), dtype(1.0)) == dtype(1.0):
            pass
        value = wp.atomic_exch(counter, 0, dtype(0.0))
        counter[0] = value + dtype(1.0)
        wp.atomic_exch(lock, 0, dtype(0.0))
        # compare by bits: -0.0 does not match 0.0, so nothing is stored
        olds[i] = wp.atomic_cas(olds, i, dtype(-0.0), dtype(5.0))

    return count_under_lock


@pytest.mark.parametrize("device", ["cpu", "cuda"])
@pytest.mark.parametrize("dtype", [wp.float16, wp.float32, wp.float64])
def test_atomic_cas_on_floats(device, dtype):
    n = 200 if device == "cpu" else 50
    counter = wp.zeros(1, dtype=dtype, device=device)
    lock = wp.zeros(1, dtype=dtype, device=device)
    olds = wp.zeros(n, dtype=dtype, device=device)
    wp.launch(_float_lock_kernel(dtype), n, inputs=[counter, lock, olds], device=device)
    assert counter.numpy()[0] == n and lock.numpy()[0] == 0
    np.testing.assert_array_equal(olds.numpy(), np.zeros(n))



@wp.kernel
def vector_bits(words: wp.array(dtype=wp.vec3ui), out: wp.array(dtype=wp.vec3ui)):
    i = wp.tid()
    mask = wp.vec3ui(wp.uint32(1)) << wp.vec3ui(wp.uint32(i), wp.uint32(i + 1), wp.uint32(i + 2))
    wp.atomic_or(words, 0, mask)
    wp.atomic_xor(words, 1, mask)
    wp.atomic_and(words, 2, ~mask)
    if i == 0:
        a = wp.vec3ui(wp.uint32(12), wp.uint32(10), wp.uint32(7))
        out[0] = ((a & wp.vec3ui(wp.uint32(6))) | wp.vec3ui(wp.uint32(1))) ^ \
            (a >> wp.vec3ui(wp.uint32(1)))


def test_bitwise_operators_and_atomics_on_integer_vectors():
    n = 8
    words = wp.array(np.array([[0, 0, 0], [0, 0, 0], [0xFFFF] * 3], np.uint32), dtype=wp.vec3ui)
    out = wp.zeros(1, dtype=wp.vec3ui)
    wp.launch(vector_bits, n, inputs=[words, out])
    masks = np.array([[1 << i, 1 << (i + 1), 1 << (i + 2)] for i in range(n)], np.uint32)
    ored = np.bitwise_or.reduce(masks, axis=0)
    xored = np.bitwise_xor.reduce(masks, axis=0)
    anded = np.full(3, 0xFFFF, np.uint32) & ~ored
    np.testing.assert_array_equal(words.numpy(), [ored, xored, anded])
    a = np.array([12, 10, 7], np.uint32)
    np.testing.assert_array_equal(out.numpy()[0], ((a & 6) | 1) ^ (a >> 1))
