"""Random draws for the ``lower`` pass: Warp passes the generator state by reference, so every
draw (``wp.randf(state)``, the samplers) rebinds the caller's state variable to the advanced
state. The numbers follow Warp's ``rand.h`` bit for bit (see ``weft/stdlib/random.py``)."""
from __future__ import annotations

import ast

import numpy as np

from .. import types as T
from . import ir


class RandomLowering:
    def random_draw(self, sf, node):
        """``wp.randf(state[, lo, hi])``, ``randi``, ``randu``, ``randn``: each draw advances
        the caller's ``state`` variable (Warp passes it by reference)."""
        if not node.args or not isinstance(node.args[0], ast.Name) or \
                node.args[0].id not in self.env or self.env[node.args[0].id].type is not T.uint32:
            raise self.fail(node, f"wp.{sf.name}(state, ...) needs a state variable made by "
                            "wp.rand_init (a uint32)")
        name = node.args[0].id
        extra = [self.lower_expr(a) for a in node.args[1:]]

        def draw():
            s = self.apply_builtin("rand_pcg", [self.env[name]], node)
            self.bind(name, s, node)
            return self.env[name]

        if sf.name == "randn":
            u1 = self.apply_builtin("rand_float", [draw()], node)
            u2 = self.apply_builtin("rand_float", [draw()], node)
            eps = ir.Const(5.96e-8, T.float32)
            r = self.apply_builtin("add", [u1, eps], node)
            r = self.apply_builtin("log", [r], node)
            r = self.apply_builtin("mul", [ir.Const(-2.0, T.float32), r], node)
            r = self.apply_builtin("sqrt", [r], node)
            a = self.apply_builtin("mul", [ir.Const(float(np.float32(2.0) * np.float32(np.pi)),
                                                    T.float32), u2], node)
            return self.apply_builtin("mul", [r, self.apply_builtin("cos", [a], node)], node)
        if sf.name.startswith("sample_"):
            return self.random_sample(sf.name, draw, node)
        s = draw()
        if sf.name == "randf":
            v = self.apply_builtin("rand_float", [s], node)
            if len(extra) == 2:
                lo, hi = (self.adapt_literal(e, T.float32) for e in extra)
                span = self.apply_builtin("sub", [hi, lo], node)
                v = self.apply_builtin("add", [self.apply_builtin("mul", [span, v], node), lo],
                                       node)
            return v
        if sf.name == "randi":
            if len(extra) == 2:
                lo, hi = (self.adapt_literal(e, T.int32) for e in extra)
                return self.apply_builtin("rand_int_range", [s, lo, hi], node)
            return self.apply_builtin("rand_int", [s], node)
        return s  # randu

    def random_sample(self, kind, draw, node):
        """Warp's geometric samplers (rand.h), in the order Warp draws its numbers."""
        f = ir.Const

        def op(name, *args):
            return self.apply_builtin(name, list(args), node)

        def u():
            return op("rand_float", draw())

        two_pi = f(float(np.float32(2.0) * np.float32(np.pi)), T.float32)
        one, two = f(1.0, T.float32), f(2.0, T.float32)
        if kind in ("sample_unit_sphere_surface", "sample_unit_sphere"):
            phi = op("acos", op("sub", one, op("mul", two, u())))
            theta = op("mul", two_pi, u())
            r = op("pow", u(), f(float(np.float32(1.0) / np.float32(3.0)), T.float32)) \
                if kind == "sample_unit_sphere" else one
            sp = op("sin", phi)
            return self.apply_builtin("construct", [op("mul", op("mul", r, op("cos", theta)), sp),
                                                    op("mul", op("mul", r, op("sin", theta)), sp),
                                                    op("mul", r, op("cos", phi))], node,
                                      {"type": T.vec3})
        if kind == "sample_unit_disk":
            r = op("sqrt", u())
            theta = op("mul", two_pi, u())
            return self.apply_builtin("construct", [op("mul", r, op("cos", theta)),
                                                    op("mul", r, op("sin", theta))], node,
                                      {"type": T.vec2})
        if kind == "sample_unit_ring":
            theta = op("mul", two_pi, u())
            return self.apply_builtin("construct", [op("cos", theta), op("sin", theta)], node,
                                      {"type": T.vec2})
        if kind == "sample_triangle":
            r = op("sqrt", u())
            return self.apply_builtin("construct", [op("sub", one, r), op("mul", u(), r)], node,
                                      {"type": T.vec2})
        raise self.fail(node, f"wp.{kind} is not supported")
