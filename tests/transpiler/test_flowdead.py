"""Dead assignments by flow (weft.transpiler.flowdead): what goes, what stays, checked by running
the function before and after on the same inputs (everything it writes and returns equal)."""
import ast
import textwrap

import numpy as np

from weft.transpiler.flowdead import drop_dead_by_flow

SRC = '''
def f(a, out, n):
    acc = 0.0
    _n0 = 0
    _stk0 = np.empty(64)
    for k in range(n):
        _stk0[_n0] = acc
        _n0 += 1
        x = a[k]
        acc = acc * 0.5 + x
    out[0] = acc
    for _k0 in range(_n0 - 1, -1, -1):
        acc = _stk0[_k0]          # the replay: nothing after it reads acc
        k = _k0
        x = a[k]
        acc2 = acc * 0.5 + x
        out[1 + k] = x * 2.0
        if x > 0.5:
            break
    y = 3.0
    while n > 0:
        z = y + 1.0               # read in the next iteration (by y), then after the loop
        y = z
        n -= 1
    out[10] = y
    return y
'''


def _run(src, a, n):
    ns = {"np": np}
    exec(src, ns)
    out = np.zeros(12)
    r = ns["f"](a, out, n)
    return out, r


def test_dead_replays_go_and_everything_written_is_unchanged():
    tree = ast.parse(textwrap.dedent(SRC))
    fdef = tree.body[0]
    drop_dead_by_flow(fdef)
    new = ast.unparse(fdef)
    # the reverse loop's replay of acc is dead; the stack nothing reads then goes with its stores
    assert "acc = _stk0[_k0]" not in new and "_stk0" not in new
    assert "acc2" not in new
    # live values stay: the forward loop's acc (out[0]), the while loop's carried y
    assert "acc = acc * 0.5 + x" in new and "z = y + 1.0" in new and "y = z" in new
    rng = np.random.default_rng(0)
    for n in (0, 1, 5, 9):
        a = rng.random(12)
        before = _run(textwrap.dedent(SRC), a, n)
        after = _run(new, a, n)
        np.testing.assert_array_equal(before[0], after[0])
        assert before[1] == after[1]


def test_a_value_read_after_a_break_or_in_a_later_iteration_stays():
    src = textwrap.dedent('''
    def f(a, out, n):
        last = 0.0
        for k in range(n):
            v = a[k] * 2.0
            if v > 1.0:
                last = v
                break
            prev = v
        out[0] = last
        for k in range(n):
            if k > 0:
                out[k] = prev2
            prev2 = a[k]
    ''')
    fdef = ast.parse(src).body[0]
    drop_dead_by_flow(fdef)
    new = ast.unparse(fdef)
    assert "last = v" in new and "prev2 = a[k]" in new   # after a break; in the next iteration
    assert "prev = v" not in new                          # read by nothing
    rng = np.random.default_rng(1)
    for n in (0, 3, 8):
        a = rng.random(10)
        o1, o2 = np.zeros(12), np.zeros(12)
        ns1, ns2 = {}, {}
        exec(src, ns1)
        exec(new, ns2)
        ns1["f"](a, o1, n)
        ns2["f"](a, o2, n)
        np.testing.assert_array_equal(o1, o2)


def test_writes_into_fresh_arrays_go_with_them_unless_an_alias_made_before_sees_them():
    src = textwrap.dedent('''
    def f(a, out, n):
        for k in range(n):
            _tm0 = np.zeros(4)
            _fv0 = _tm0.reshape(4)
            for _e0 in range(4):
                _fv0[_e0] = a[_e0] * k      # nothing reads _tm0: goes, its loop too
            _tm1 = np.zeros(4)
            _fv1 = _tm1.reshape(4)
            for _e1 in range(4):
                _fv1[_e1] = a[_e1] + k      # read through the alias made after: stays
            r = _tm1
            out[k] = r[1]
            _tm2 = np.zeros(4)
            early = _tm2                    # an alias made before the write: not fresh, stays
            _fv2 = _tm2.reshape(4)
            for _e2 in range(4):
                _fv2[_e2] = a[_e2] * 3.0
            out[6 + k] = early[2]
            _tm3 = np.zeros(4)
            part = _tm3[1:3]                # a slice: a view made before the write, stays
            _fv3 = _tm3.reshape(4)
            for _e3 in range(4):
                _fv3[_e3] = a[_e3] - k
            out[11] = part[0]
    ''')
    fdef = ast.parse(src).body[0]
    drop_dead_by_flow(fdef)
    new = ast.unparse(fdef)
    assert "_tm0" not in new and "_fv0" not in new and "_e0" not in new
    assert "_fv1[_e1] = a[_e1] + k" in new and "_fv2[_e2] = a[_e2] * 3.0" in new
    assert "_fv3[_e3] = a[_e3] - k" in new
    for n in (0, 2, 5):
        a = np.arange(4.0) + 0.5
        o1, o2 = np.zeros(12), np.zeros(12)
        ns1, ns2 = {"np": np}, {"np": np}
        exec(src, ns1)
        exec(new, ns2)
        ns1["f"](a, o1, n)
        ns2["f"](a, o2, n)
        np.testing.assert_array_equal(o1, o2)
