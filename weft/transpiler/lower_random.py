"""Random draws for the ``lower`` pass: Warp passes the generator state by reference, so every
draw (``wp.randf(state)``, the samplers) rebinds the caller's state variable to the advanced
state. The numbers follow Warp's ``rand.h`` bit for bit (see ``weft/stdlib/random.py``)."""
from __future__ import annotations

import ast

import numpy as np

from .. import types as T
from ..stdlib.random import cdf_index, poisson_count
from . import ir


class RandomLowering:
    def random_draw(self, sf, node):
        """``wp.randf(state[, lo, hi])``, ``randi``, ``randu``, ``randn``, ``poisson``, the
        samplers: each draw advances the caller's ``state`` variable (Warp passes it by
        reference)."""
        if not node.args or not isinstance(node.args[0], ast.Name) or \
                node.args[0].id not in self.env or self.env[node.args[0].id].type is not T.uint32:
            raise self.fail(node, f"wp.{sf.name}(state, ...) needs a state variable made by "
                            "wp.rand_init (a uint32)")
        name = node.args[0].id
        if node.keywords:
            raise self.fail(node.keywords[0], f"wp.{sf.name}() takes positional arguments only")
        bounded = {"randf": "lo, hi", "randi": "lo, hi", "randu": "lo, hi"}
        if sf.name in bounded and len(node.args) not in (1, 3):
            raise self.fail(node, f"wp.{sf.name}(state) or wp.{sf.name}(state, "
                            f"{bounded[sf.name]}): got {len(node.args)} arguments")
        if sf.name == "randn" and len(node.args) != 1:
            raise self.fail(node, "wp.randn(state) takes only the state")
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
        if sf.name == "poisson":
            return self.random_poisson(name, extra, node)
        if sf.name == "sample_cdf":
            return self.random_sample_cdf(draw, extra, node)
        if sf.name.startswith("sample_"):
            if extra:
                raise self.fail(node, f"wp.{sf.name}(state) takes only the state")
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
        if len(extra) == 2:  # randu(state, lo, hi): state % (hi - lo) + lo (lo < hi)
            lo, hi = (self.adapt_literal(e, T.uint32) for e in extra)
            if lo.type is not T.uint32 or hi.type is not T.uint32:
                raise self.fail(node, "wp.randu(state, low, high) needs uint32 bounds")
            return self.apply_builtin("add", [self.apply_builtin(
                "mod", [s, self.apply_builtin("sub", [hi, lo], node)], node), lo], node)
        return s  # randu

    def random_poisson(self, name, extra, node):
        """``wp.poisson(state, lam)``: the kernel-language ``poisson_count`` (Warp's algorithms,
        which loop) returns the count and the advanced state, rebound to the caller's."""
        lam = self.adapt_literal(extra[0], T.float32) if len(extra) == 1 else None
        if lam is None or lam.type is not T.float32:
            raise self.fail(node, "wp.poisson(state, lam) needs a float32 lam")
        out = self.call_func_plain(poisson_count, node, [self.env[name], lam], 2)
        count, state = (self.apply_builtin("tuple_get", [out], node, attrs={"index": k})
                        for k in (0, 1))
        self.bind(name, state, node)
        return count

    def random_sample_cdf(self, draw, extra, node):
        """``wp.sample_cdf(state, cdf)``: one uniform draw, then the first index of the 1-D
        float32 array ``cdf`` whose value is not below it (binary search, as Warp)."""
        cdf = extra[0] if len(extra) == 1 else None
        if cdf is None or not isinstance(cdf.type, T.ArrayType) or cdf.type.ndim != 1 or \
                cdf.type.dtype is not T.float32:
            raise self.fail(node, "wp.sample_cdf(state, cdf) needs a 1-D array of float32")
        u = self.apply_builtin("rand_float", [draw()], node)
        return self.call_func_plain(cdf_index, node, [cdf, u], 2)

    def random_sample(self, kind, draw, node):
        """Warp's geometric samplers (rand.h), in the order Warp draws its numbers."""
        f = ir.Const

        def op(name, *args):
            return self.apply_builtin(name, list(args), node)

        def u():
            return op("rand_float", draw())

        two_pi = f(float(np.float32(2.0) * np.float32(np.pi)), T.float32)
        one, two = f(1.0, T.float32), f(2.0, T.float32)
        half = f(0.5, T.float32)
        if kind in ("sample_unit_square", "sample_unit_cube"):  # randf - 0.5, in order
            n, vt = (2, T.vec2) if kind == "sample_unit_square" else (3, T.vec3)
            return self.apply_builtin("construct", [op("sub", u(), half) for _ in range(n)],
                                      node, {"type": vt})
        if kind in ("sample_unit_sphere_surface", "sample_unit_sphere",
                    "sample_unit_hemisphere_surface", "sample_unit_hemisphere"):
            # acos(1 - 2u) over the sphere, acos(1 - u) over the upper hemisphere
            w = u() if "hemisphere" in kind else op("mul", two, u())
            phi = op("acos", op("sub", one, w))
            theta = op("mul", two_pi, u())
            r = op("pow", u(), f(float(np.float32(1.0) / np.float32(3.0)), T.float32)) \
                if kind in ("sample_unit_sphere", "sample_unit_hemisphere") else one
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
