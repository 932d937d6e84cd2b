"""PyTree traversal rules (weft.pytree / weft.tree) and the operations that accept PyTrees:
wp.zeros/ones/empty of a PyTree type, enable_grad, grad, detach, clone, tape gradients with
PyTree keys, and optimizer parameters."""
import collections
import dataclasses

import numpy as np
import pytest

import weft as wp
from weft.core import pytree


@dataclasses.dataclass
class State:
    x: wp.array(dtype=wp.vec3)
    v: wp.array(dtype=wp.vec3)
    t: float = 0.0


class Body:
    WEFT_STRUCT = {"m": float, "state": State}

    def __init__(self):
        self.m = None
        self.state = None
        self.label = "not traversed"


@wp.kernel
def square(a: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = a[i] * a[i]


@wp.kernel
def weighted_sum(x: wp.array(dtype=wp.vec3), m: wp.array(dtype=float),
                 out: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(out, 0, m[i] * wp.dot(x[i], x[i]))


def arr(values, dtype=float, grad=False):
    return wp.array(np.asarray(values, dtype=np.float32), dtype=dtype, requires_grad=grad)


def test_containers_are_traversed_in_order():
    a, b, c, d = (arr([k]) for k in range(4))
    tree = {"first": [a, (b, 3.0)], "second": State(c, d, 0.25), "none": None}
    leaves, spec = pytree.flatten(tree)
    assert leaves == [a, b, c, d]
    assert repr(spec) == "dict(first=list(*, tuple(*, 3.0)), second=State(x=*, v=*, t=0.25), " \
        "none=None)"
    e, f, g, h = (arr([k]) for k in range(4))
    back = pytree.unflatten(spec, [e, f, g, h])
    assert back["first"][0] is e and back["first"][1] == (f, 3.0)
    assert isinstance(back["second"], State) and back["second"].x is g and back["second"].t == 0.25
    assert back["second"] is not tree["second"]  # a copy: the original is unchanged
    assert tree["second"].x is c


def test_weft_struct_fields_only():
    body = Body()
    body.m, body.state = arr([1.0]), State(arr([[0, 0, 0]], wp.vec3), arr([[1, 1, 1]], wp.vec3))
    body.extra = arr([5.0])  # not declared: not traversed
    leaves = pytree.leaves(body)
    assert leaves == [body.m, body.state.x, body.state.v]
    copy = pytree.unflatten(pytree.flatten(body)[1], [arr([2.0]), body.state.x, body.state.v])
    assert copy.label == "not traversed" and copy.extra is body.extra
    assert copy.m.numpy()[0] == 2.0 and body.m.numpy()[0] == 1.0


def test_subclasses_of_containers_are_leaves():
    a = arr([1.0])

    class MyList(list):
        pass
    Pair = collections.namedtuple("Pair", "a b")
    assert pytree.leaves(MyList([a])) == []
    assert pytree.leaves(Pair(a, a)) == []
    assert pytree.leaves([MyList([a]), a]) == [a]


def test_non_array_fields_are_constants():
    assert pytree.leaves([1, "x", None, 2.5, np.zeros(3)]) == []
    a = arr([1.0])
    out = wp.tree.map(lambda x: wp.clone(x), ["tag", a, 3])
    assert out[0] == "tag" and out[2] == 3 and out[1] is not a


def test_cycles_raise_recursion_error():
    lst = [arr([1.0])]
    lst.append(lst)
    with pytest.raises(RecursionError, match="cycle"):
        pytree.leaves(lst)
    d = {}
    d["self"] = [d]
    with pytest.raises(RecursionError):
        pytree.flatten(d)
    shared = arr([1.0])
    assert pytree.leaves([shared, [shared]]) == [shared, shared]  # sharing is not a cycle


def test_map_checks_structure():
    with pytest.raises(ValueError, match="expected a value of structure"):
        wp.tree.map(lambda a, b: a, [arr([1.0])], [arr([1.0]), arr([2.0])])


def test_zeros_ones_empty_of_tree_types():
    s = wp.zeros(State, 5, requires_grad=True)
    assert isinstance(s, State) and s.t == 0.0
    assert s.x.shape == (5,) and s.x.dtype is wp.vec3 and s.x.grad is not None
    body = wp.ones(Body, n=3)
    assert body.m.dtype is wp.float32 and np.all(body.m.numpy() == 1)
    assert np.all(body.state.v.numpy() == 1) and body.label == "not traversed"
    e = wp.empty(State, (2, 3))
    assert e.v.shape == (2, 3)
    # arrays are unchanged
    assert wp.zeros(4, dtype=wp.vec3).shape == (4,)
    assert wp.zeros((2, 2), dtype=float).numpy().shape == (2, 2)
    assert wp.tree.zeros(State, 2).x.shape == (2,)


def test_zeros_of_tree_type_errors():
    with pytest.raises(TypeError, match="give the shape"):
        wp.zeros(State)

    @dataclasses.dataclass
    class Bad:
        name: str

    with pytest.raises(TypeError, match="Bad.name"):
        wp.zeros(Bad, 3)

    class NeedsArgs:
        WEFT_STRUCT = {"a": float}

        def __init__(self, a):
            self.a = a

    with pytest.raises(TypeError, match="no arguments"):
        wp.zeros(NeedsArgs, 3)


def test_enable_grad_grad_detach_clone():
    s = State(arr([[1, 2, 3]], wp.vec3), arr([[4, 5, 6]], wp.vec3), 1.0)
    assert wp.enable_grad(s) is s and s.x.grad is not None and s.v.grad is not None
    s.x.grad.fill_(7.0)
    g = wp.grad(s)
    assert isinstance(g, State) and g.x is s.x.grad and g.t == 1.0
    d = wp.detach(s)
    assert d.x.grad is None and np.shares_memory(d.x.numpy(), s.x.numpy())
    c = wp.clone(s)
    assert not np.shares_memory(c.x.numpy(), s.x.numpy())
    assert np.array_equal(c.v.numpy(), s.v.numpy()) and c.x.grad is not None
    no_grad = arr([1.0, 2.0])
    assert np.array_equal(wp.grad([no_grad])[0].numpy(), [0.0, 0.0])  # Dr.Jit: zero
    wp.disable_grad(s)
    assert s.x.grad is None


def test_grad_of_func_keeps_kernel_meaning():
    @wp.func
    def f(x: float):
        return x * x

    from weft.stdlib.lang import GradOf
    assert isinstance(wp.grad(f), GradOf)
    with pytest.raises(TypeError, match="wp.func or a builtin"):
        wp.grad(3.0)


def test_tape_backward_and_gradients_with_tree_keys():
    x = arr([[1, 2, 3], [0, 1, 0]], wp.vec3, grad=True)
    m = arr([2.0, 3.0], grad=True)
    params = {"x": x, "m": m}
    out = wp.zeros(1, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(weighted_sum, dim=2, inputs=[x, m], outputs=[out])
    tape.backward(grads={(out,): (np.ones(1, np.float32),)})
    g = tape.gradients[params]
    assert np.allclose(g["x"].numpy(), [[4, 8, 12], [0, 6, 0]])
    assert np.allclose(g["m"].numpy(), [14, 1])
    assert params in tape.gradients
    tape.zero()
    # an unhashable dataclass key: a list of pairs
    s = State(x, x)
    tape.backward(grads=[([out], [np.ones(1, np.float32)])])
    assert np.allclose(wp.grad(s).x.numpy(), [[4, 8, 12], [0, 6, 0]])
    with pytest.raises(wp.LaunchError, match="structure"):
        tape.backward(grads={(out,): [np.ones(1), np.ones(1)]})
    with pytest.raises(wp.LaunchError, match="keys must be"):
        tape.backward(grads={"out": np.ones(1)})


def test_tape_forward_with_tree_keys():
    a = arr([1.0, 2.0], grad=True)
    out = wp.zeros(2, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(square, dim=2, inputs=[a], outputs=[out])
    t = tape.forward({(a,): (np.array([1.0, 1.0], np.float32),)})
    assert np.allclose(t[[out]][0].numpy(), [2.0, 4.0])


def test_optimizer_takes_trees():
    from weft.libs.optim import SGD, Adam
    s = wp.enable_grad(State(arr([[1, 1, 1]], wp.vec3), arr([[2, 2, 2]], wp.vec3)))
    s.x.grad.fill_(1.0)
    s.v.grad.fill_(-1.0)
    opt = SGD(s, lr=0.5)
    opt.step(wp.grad(s))
    assert np.allclose(s.x.numpy(), 0.5) and np.allclose(s.v.numpy(), 2.5)
    adam = Adam({"a": s.x}, lr=0.1)
    adam.step({"a": s.x.grad})
    assert np.allclose(s.x.numpy(), 0.4)
    with pytest.raises(ValueError, match="gradients"):
        opt.step([s.x.grad])
