"""Narrow integer temporaries that only index arrays are left in 64 bits (the ``index_wraps``
pass, ``drop_index_wraps``); every other use keeps C's wrap-around."""
import ast
import textwrap

import numpy as np

import weft as wp
from weft.transpiler.index_wraps import drop_index_wraps

SNIPPET = """
def f(a, b, tid):
    _t1 = int32(tid * int32(2))
    x = a[_t1]
    _t2 = int32(tid * int32(3))
    _t3 = int32(_t2 + int32(1))
    y = a[_t3, 0]
    _t4 = int32(tid * int32(5))
    z = _t4 % int32(7)
    _t5 = int32(tid + int32(1))
    b[_t5] = _t5
    _t6 = int16(tid * int16(3))
    _t7 = int32(_t6 + int32(1))
    w = a[_t7]
    k = int32(tid * int32(2))
    v = a[k]
"""


def _wrapped(src):
    fdef = ast.parse(textwrap.dedent(src)).body[0]
    drop_index_wraps(fdef)
    return {s.targets[0].id: ast.unparse(s.value) for s in fdef.body
            if isinstance(s, ast.Assign) and isinstance(s.targets[0], ast.Name)}


def test_only_index_and_same_width_modular_uses_lose_the_wrap():
    got = _wrapped(SNIPPET)
    assert got["_t1"] == "tid * int32(2)"      # an index
    assert got["_t2"] == "tid * int32(3)"      # an operand of + inside an int32 wrap
    assert got["_t3"] == "_t2 + int32(1)"      # an index (of a tuple subscript)
    assert got["_t4"].startswith("int32(")     # % sees the wrapped value
    assert got["_t5"].startswith("int32(")     # stored as a value too
    assert got["_t6"].startswith("int16(")     # a narrower wrap inside an int32 one stays
    assert got["_t7"] == "_t6 + int32(1)"
    assert got["k"].startswith("int32(")       # user variables are never touched


@wp.kernel
def index_math(a: wp.array(dtype=int), out: wp.array(dtype=int), big: wp.array(dtype=int)):
    tid = wp.tid()
    out[tid] = a[tid * 2 + 1] + (tid * 2147483647) % 7
    big[tid] = tid * 2147483647 + 5


def test_kernel_values_keep_int32_semantics():
    n = 600  # above the serial threshold: the threaded entry runs
    a = np.arange(2 * n + 1, dtype=np.int32) * 3
    out, big = wp.zeros(n, dtype=int), wp.zeros(n, dtype=int)
    wp.launch(index_math, n, inputs=[wp.array(a, dtype=int), out, big])
    tid = np.arange(n, dtype=np.int64)
    wrapped = ((tid * 2147483647 + 2**31) % 2**32 - 2**31)  # C's int32 product
    expect_mod = np.fmod(wrapped, 7)                           # C's % truncates
    np.testing.assert_array_equal(out.numpy(), a[2 * tid + 1] + expect_mod)
    np.testing.assert_array_equal(big.numpy(), (wrapped + 5 + 2**31) % 2**32 - 2**31)
    src = index_math.source("forward")
    assert "int32(tid * int32(2))" not in src  # the index temporary lost its wrap


def test_generated_functions_get_pass_in_empty_blocks_and_long_tuples_split():
    """Empty blocks get ``pass`` (``drop_index_wraps``, on its statement walk) and tuple
    displays of more than 30 items in generated functions become sums of tuples (nested ones
    too; the unparser, as it writes them), so the text compiles and gives the same values. A
    module-level display (the ABI table) is written as it is."""
    from weft.transpiler.assemble import _text
    inner = ", ".join(f"x + {i}" for i in range(40))
    src = textwrap.dedent(f"""
    def g(x):
        for i in range(3):
            pass
        t = ({inner}, ({inner}))
        return t
    """)
    fdef = ast.parse(src).body[0]
    fdef.body[0].body.clear()                      # an empty loop body, as rules can leave
    drop_index_wraps(fdef)
    numbers = ", ".join(str(i) for i in range(40))
    table = ast.parse(f"T = ({numbers})").body[0]
    text = _text([fdef, table])
    assert "pass" in text and text.count(") + (") >= 2
    assert f"T = ({numbers})" in text
    ns = {}
    exec(compile(text, "<tidy>", "exec"), ns)     # noqa: S102
    want = tuple(1 + i for i in range(40)) + (tuple(1 + i for i in range(40)),)
    assert ns["g"](1) == want
