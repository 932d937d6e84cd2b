"""Pass ``lower``: Python AST of a kernel or func -> typed, structured IR (see :mod:`.ir`).

Invariant guaranteed: the IR satisfies the invariants stated in :mod:`.ir`; every operand has
a weft type; every type error in the source has been reported as a located ``KernelError``.

Statements are handled here; expressions and calls in :mod:`.lower_expr`.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass

from .. import types as T
from ..errors import KernelNameError, KernelSyntaxError, KernelTypeError
from ..stdlib.random import is_draw
from . import ir
from .lower_expr import ExprLowerer
from .lower_values import is_transform_part
from .lower_struct import STRUCTISH, StructArr, StructRef, is_struct_array
from .source import error


@dataclass
class Exit:
    """A way out of a block: ``fall`` (falls through), ``break``, ``continue`` or ``return``."""

    kind: str
    env: dict
    block: list
    value: object = None
    node: object = None


# builtins with Warp's output arguments: name -> number of trailing outputs
OUTPUT_ARGS = {"svd3": 3, "qr3": 2, "eig3": 2, "quat_to_axis_angle": 2}


def _call_name(node):
    f = node.func
    return f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)


def assigned_names(stmts):
    """Names a statement list (re)binds, in order of appearance, loop variables excluded."""
    out = []

    def add(target):
        if isinstance(target, ast.Name):
            if target.id not in out:
                out.append(target.id)
        elif isinstance(target, (ast.Tuple, ast.List)):
            for t in target.elts:
                add(t)
        elif isinstance(target, (ast.Subscript, ast.Attribute)):
            add(target.value)  # component assignment rebinds a local value

    for s in stmts:
        for node in ast.walk(s):
            if isinstance(node, ast.Assign):
                for t in node.targets:
                    add(t)
            elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
                add(node.target)
            elif isinstance(node, ast.For):
                add(node.target)
            elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Name):
                fname = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(
                    node.func, "id", None)
                if is_draw(fname):
                    add(node.args[0])  # a random draw advances its state variable
            if isinstance(node, ast.Call) and OUTPUT_ARGS.get(_call_name(node), 0):
                for a in node.args[-OUTPUT_ARGS[_call_name(node)]:]:
                    add(a)  # wp.svd3(A, U, sigma, V) assigns U, sigma and V
    return out


def may_exit(stmts, loop_level=True):
    """True if ``stmts`` can leave the enclosing block early (break/continue/return)."""
    for s in stmts:
        if isinstance(s, ast.Return):
            return True
        if loop_level and isinstance(s, (ast.Break, ast.Continue)):
            return True
        if isinstance(s, ast.If) and (may_exit(s.body, loop_level) or may_exit(s.orelse, loop_level)):
            return True
        if isinstance(s, (ast.For, ast.While)) and may_exit(s.body, loop_level=False):
            return True
    return False


class Lowerer(ExprLowerer):
    """Lowers one kernel or func body. See the module docstring."""

    def lower_function(self, params, prebound=None, epilogue=()):
        """Lower the body with ``params`` (list of (name, type)) bound, then ``prebound`` local
        names (name -> operand) and followed by the ``epilogue`` statements (AST)."""
        for pname, ptype in params:
            if T.is_struct(ptype) or is_struct_array(ptype):
                self.bind_struct_param(pname, ptype)
                continue
            v = ir.Var(pname, ptype)
            self.versions[pname] = 0
            self.env[pname] = v
            self.params.append(v)
        for name, value in (prebound or {}).items():
            self.versions[name] = 0
            self.names.taken.add(name)
            self.env[name] = value
        body = list(self.src.tree.body) + list(epilogue)
        exits = self.lower_block(body)
        self.finish_function(exits)
        return self.block

    def finish_function(self, exits):
        rets = [e for e in exits if e.kind == "return" and e.value is not None]
        for e in exits:
            if e.kind in ("break", "continue"):
                raise error(self.src, e.node, f"'{e.kind}' outside a loop", KernelSyntaxError)
        if not rets:
            if self.kind == "func":
                self.ret_type = None
            return
        if self.kind == "kernel":
            raise error(self.src, rets[0].node, "kernels cannot return a value", KernelSyntaxError)
        missing = [e for e in exits if e.value is None]
        if missing:
            raise error(self.src, missing[0].node or self.src.tree,
                        "this func returns a value on some paths but not on all of them",
                        KernelSyntaxError)
        rtype = rets[0].value.type
        for e in rets[1:]:
            if e.value.type != rtype:
                raise error(self.src, e.node, f"returns {T.type_name(e.value.type)} here but "
                            f"{T.type_name(rtype)} elsewhere", KernelTypeError)
        self.ret_type = rtype
        if len(rets) == 1:
            self.block.append(ir.Return(rets[0].value, self.loc(rets[0].node)))
            return
        rv = self.new_temp(rtype, "ret")
        for e in rets:
            e.block.append(ir.Assign(rv, ir.Copy(e.value), self.loc(e.node)))
        self.block.append(ir.Return(rv, self.loc(rets[0].node)))

    # ------------------------------------------------------------------------------ blocks
    def lower_block(self, stmts):
        for i, s in enumerate(stmts):
            if isinstance(s, (ast.Break, ast.Continue)):
                return [Exit(type(s).__name__.lower(), dict(self.env), self.block, node=s)]
            if isinstance(s, ast.Return):
                value = None
                if s.value is not None:
                    value = self.lower_return_value(s.value)
                return [Exit("return", dict(self.env), self.block, value, s)]
            if isinstance(s, ast.If):
                cond = self.static_condition(s.test)
                if cond is not None:  # a compile-time condition: only the branch taken exists
                    return self.lower_block(list(s.body if cond else s.orelse) +
                                            list(stmts[i + 1:]))
            if isinstance(s, ast.If) and may_exit(s.body + s.orelse):
                return self.lower_if_tail(s, stmts[i + 1:])
            self.lower_stmt(s)
            if isinstance(s, (ast.For, ast.While)) and self.loop_returned is not None:
                # a return inside the loop left it through a flag: return after it
                has_value, self.loop_returned = self.loop_returned, None
                check = ast.If(ast.Name("__retf", ast.Load()), [ast.Return(
                    ast.Name("__retv", ast.Load()) if has_value else None)], [])
                for node in ast.walk(check):
                    ast.copy_location(node, s)
                return self.lower_block([check] + list(stmts[i + 1:]))
        return [Exit("fall", dict(self.env), self.block)]

    def static_condition(self, test):
        """True/False when an ``if`` test is a compile-time constant, else None. Lowering the
        test has no side effects worth keeping when it folds to a constant."""
        saved = (list(self.block), dict(self.env), self.last_temp, dict(self.names.counts),
                 set(self.names.taken), dict(self.versions), list(self.callees))
        try:
            c = self.lower_condition(test)
        except Exception:  # noqa: BLE001 - lowered again, for real, with its error
            c = None
        (self.block[:], self.env, self.last_temp, self.names.counts, self.names.taken,
         self.versions, self.callees[:]) = saved
        return bool(c.value) if isinstance(c, ir.Const) else None

    def in_block(self, env):
        """Context: lower into a fresh statement list starting from ``env``."""
        outer = self

        class _Ctx:
            def __enter__(self):
                self.saved = (outer.block, outer.env)
                outer.block, outer.env = [], dict(env)
                return outer.block

            def __exit__(self, *exc):
                outer.block, outer.env = self.saved
                return False

        return _Ctx()

    def lower_if_tail(self, s, rest):
        """An ``if`` with an early exit: the statements after it move into its branches."""
        cond = self.lower_condition(s.test)
        env0 = dict(self.env)
        with self.in_block(env0) as body:
            exits = self.lower_block(list(s.body) + list(rest))
        with self.in_block(env0) as orelse:
            exits += self.lower_block(list(s.orelse) + list(rest))
        self.block.append(ir.If(cond, body, orelse, self.loc(s)))
        return exits

    def merge(self, exits, node):
        """Join fall-through exits: variables that differ get a merged version."""
        envs = [e.env for e in exits]
        merged = {}
        for name in envs[0]:
            if not all(name in env for env in envs):
                continue
            vs = [env[name] for env in envs]
            if all(v is vs[0] for v in vs):
                merged[name] = vs[0]
                continue
            if any(v.type != vs[0].type for v in vs) or isinstance(vs[0].type, T.ArrayType):
                raise error(self.src, node, f"variable '{name}' has different types on the "
                            "branches of this statement", KernelTypeError)
            m = self.new_version(name, vs[0].type)
            for e, v in zip(exits, vs):
                e.block.append(ir.Assign(m, ir.Copy(v), self.loc(node)))
            merged[name] = m
        return merged

    # ------------------------------------------------------------------------------ statements
    def lower_stmt(self, s):
        method = getattr(self, "stmt_" + type(s).__name__, None)
        if method is None:
            raise error(self.src, s, f"'{type(s).__name__}' statements are not supported in "
                        "kernels", KernelSyntaxError)
        method(s)

    def stmt_Pass(self, s):
        pass

    def stmt_Expr(self, s):
        if isinstance(s.value, ast.Constant):
            return  # docstring or bare constant
        self.lower_expr(s.value, allow_void=True)

    def stmt_If(self, s):
        cond = self.lower_condition(s.test)
        env0 = dict(self.env)
        with self.in_block(env0) as body:
            (e1,) = self.lower_block(s.body)
        with self.in_block(env0) as orelse:
            (e2,) = self.lower_block(s.orelse)
        self.block.append(ir.If(cond, body, orelse, self.loc(s)))
        self.env = self.merge([e1, e2], s)

    def stmt_Assign(self, s):
        if isinstance(s.value, ast.Call) and self.is_tid_call(s.value):
            if len(s.targets) != 1:
                raise error(self.src, s, "assign wp.tid() to one target", KernelSyntaxError)
            return self.assign_tid(s.targets[0], s.value)
        if (len(s.targets) == 1 and isinstance(s.targets[0], ast.Tuple)
                and isinstance(s.value, ast.Tuple)):
            # a, b = b, a: evaluate every value before binding any name
            tgt = s.targets[0]
            if len(tgt.elts) != len(s.value.elts):
                raise error(self.src, s, f"cannot unpack {len(s.value.elts)} values into "
                            f"{len(tgt.elts)} names", KernelSyntaxError)
            values = [self.lower_expr(v) for v in s.value.elts]
            for t, v in zip(tgt.elts, values):
                self.assign(t, v, s)
            return
        value = self.lower_expr(s.value)
        for t in s.targets:
            self.assign(t, value, s)

    def stmt_AnnAssign(self, s):
        if s.value is None:
            raise error(self.src, s, "a declaration needs a value", KernelSyntaxError)
        value = self.lower_expr(s.value)
        want = self.annotation_type(s.annotation)
        if want is not None and value.type != want:
            value = self.adapt_literal(value, want)
            if value.type != want:
                raise error(self.src, s.value, f"value of type {T.type_name(value.type)} does "
                            f"not match the annotation {T.type_name(want)}", KernelTypeError)
        self.assign(s.target, value, s)

    def stmt_AugAssign(self, s):
        op_name = self.BINOPS.get(type(s.op))
        t = s.target
        if isinstance(t, ast.Subscript) and self.is_array_expr(t.value):
            arr, idx = self.lower_array_index(t)
            value = self.lower_expr(s.value)
            if isinstance(s.op, (ast.Add, ast.Sub)) and not arr.type.local:
                value = self.coerce_store(arr, value, s.value)
                op = "add" if isinstance(s.op, ast.Add) else "sub"
                self.block.append(ir.AtomicRMW(op, arr, idx, value, None, self.loc(s)))
                return
            old = self.emit(ir.Load(arr, idx), arr.type.dtype, s)
            new = self.apply_builtin(op_name, [old, value], s)
            self.block.append(ir.Store(arr, idx, new, self.loc(s)))
            return
        current = self.lower_expr(t)
        value = self.lower_expr(s.value)
        new = self.apply_builtin(op_name, [current, value], s)
        self.assign(t, new, s)

    def stmt_For(self, s):
        if s.orelse:
            raise error(self.src, s, "'for ... else' is not supported", KernelSyntaxError)
        it = s.iter
        if not (isinstance(it, ast.Call) and self.resolve_global(it.func) is range):
            raise error(self.src, it, "kernels can only loop over range(...)", KernelSyntaxError)
        if not isinstance(s.target, ast.Name):
            raise error(self.src, s.target, "the loop variable must be a single name",
                        KernelSyntaxError)
        args = [self.lower_expr(a) for a in it.args]
        if not 1 <= len(args) <= 3 or it.keywords:
            raise error(self.src, it, "range() takes 1 to 3 integer arguments", KernelTypeError)
        args = [self.adapt_literal(a, T.int32) for a in args]
        for a, node in zip(args, it.args):
            if not T.is_int(a.type):
                raise error(self.src, node, f"range() needs integers, got {T.type_name(a.type)}",
                            KernelTypeError)
        if len(args) == 1:
            args = [ir.Const(0, T.int32)] + args
        if len(args) == 2:
            args.append(ir.Const(1, T.int32))
        start, stop, step = args
        if isinstance(step, ir.Const) and step.value == 0:
            raise error(self.src, it, "range() step must not be zero", KernelTypeError)
        loopvar = self.new_version(s.target.id, T.int32)
        self.lower_loop("for", s, list(s.body), loopvar, start, stop, step, exclude=s.target.id)

    def stmt_While(self, s):
        if s.orelse:
            raise error(self.src, s, "'while ... else' is not supported", KernelSyntaxError)
        stop = ast.If(test=ast.UnaryOp(ast.Not(), s.test), body=[ast.Break()], orelse=[])
        ast.copy_location(stop, s.test)
        ast.copy_location(stop.test, s.test)
        ast.copy_location(stop.body[0], s.test)
        self.lower_loop("while", s, [stop] + list(s.body), None, None, None, None, exclude=None)

    def lower_loop(self, kind, s, body_stmts, loopvar, start, stop, step, exclude):
        # arrays are never carried: ``a[i] = x`` stores into an array without rebinding it
        carried_names = [n for n in self.expand_struct_names(assigned_names(body_stmts))
                         if n in self.env and n != exclude
                         and not isinstance(self.env[n].type, T.ArrayType)]
        env_after = dict(self.env)
        headers = {}
        for n in carried_names:
            pre = self.env[n]
            h = self.new_version(n, pre.type)
            self.block.append(ir.Assign(h, ir.Copy(pre), self.loc(s)))
            headers[n] = h
        env_body = dict(self.env)
        env_body.update(headers)
        if loopvar is not None:
            env_body[exclude] = loopvar
        with self.in_block(env_body) as body:
            exits = self.lower_block(body_stmts)
        ends = {n: self.new_version(n, headers[n].type) for n in carried_names}
        brk = None
        if any(e.kind == "break" for e in exits):
            brk = self.new_temp(T.bool, "brk")
        ret = self.loop_return_slots(exits, s)
        if ret and brk is None:
            brk = self.new_temp(T.bool, "brk")
        for e in exits:
            for h, end, value in ret:
                v = value(e)
                e.block.append(ir.Assign(end, ir.Copy(v), self.loc(e.node or s)))
            for n in carried_names:
                v = e.env.get(n)
                if v is None:
                    raise error(self.src, s, f"variable '{n}' is not defined on every path "
                                "through this loop", KernelNameError)
                if v.type != headers[n].type:
                    raise error(self.src, s, f"variable '{n}' changes type inside this loop",
                                KernelTypeError)
                e.block.append(ir.Assign(ends[n], ir.Copy(v), self.loc(e.node or s)))
            if brk is not None:
                e.block.append(ir.Assign(brk, ir.Copy(ir.Const(e.kind in ("break", "return"),
                                                              T.bool)), self.loc(e.node or s)))
        carried = [(headers[n], ends[n]) for n in carried_names]
        carried += [(h, end) for h, end, _ in ret]
        self.block.append(ir.Loop(kind, loopvar, start, stop, step, body, carried, brk,
                                  self.loc(s)))
        env_after.update(headers)
        for (h, _, _), n in zip(ret, ("__retf", "__retv")):
            env_after[n] = h
        self.env = env_after
        self.loop_names_defined_inside.update(
            n for n in assigned_names(body_stmts) if n not in env_after)

    def loop_return_slots(self, exits, s):
        """For ``return`` inside a loop: a flag and a value carried through the loop.

        Returns ``[(header, end, value_of_exit)]``; the headers are initialised before the loop
        (False, and a zero of the returned type) and ``lower_block`` returns after the loop when
        the flag is set."""
        rets = [e for e in exits if e.kind == "return"]
        if not rets:
            return []
        with_value = [e for e in rets if e.value is not None]
        if with_value and len(with_value) != len(rets):
            raise error(self.src, rets[0].node, "this func returns a value on some paths but "
                        "not on all of them", KernelSyntaxError)
        slots = []
        hf = self.new_version("__retf", T.bool)
        self.block.append(ir.Assign(hf, ir.Copy(ir.Const(False, T.bool)), self.loc(s)))
        ef = self.new_version("__retf", T.bool)
        slots.append((hf, ef, lambda e: ir.Const(True, T.bool) if e in rets
                      else e.env.get("__retf", hf)))
        if with_value:
            rtype = with_value[0].value.type
            for e in with_value[1:]:
                if e.value.type != rtype:
                    raise error(self.src, e.node, f"returns {T.type_name(e.value.type)} here but"
                                f" {T.type_name(rtype)} elsewhere", KernelTypeError)
            hv = self.new_version("__retv", rtype)
            self.block.append(ir.Assign(hv, ir.Copy(ir.Const(0, rtype)), self.loc(s)))
            ev = self.new_version("__retv", rtype)
            slots.append((hv, ev, lambda e: e.value if e in rets
                          else e.env.get("__retv", hv)))
        for e in rets:
            e.kind = "break"
        self.loop_returned = bool(with_value)
        return slots

    # ------------------------------------------------------------------------------ assignment
    def assign(self, target, value, stmt):
        if isinstance(target, ast.Name):
            if isinstance(value, STRUCTISH):
                return self.bind_struct(target.id, value, target)
            if isinstance(self.env.get(target.id), StructRef):
                raise error(self.src, target, f"cannot assign a value of type "
                            f"{T.type_name(value.type)} to struct '{target.id}'",
                            KernelTypeError)
            return self.bind(target.id, value, target)
        if isinstance(target, ast.Attribute) and self.assign_struct_attr(target, value, stmt):
            return
        if isinstance(target, (ast.Tuple, ast.List)):
            if not isinstance(value.type, T.TupleType):
                raise error(self.src, target, f"cannot unpack a value of type "
                            f"{T.type_name(value.type)}", KernelTypeError)
            if len(value.type.types) != len(target.elts):
                raise error(self.src, target, f"cannot unpack {len(value.type.types)} values "
                            f"into {len(target.elts)} names", KernelTypeError)
            for i, t in enumerate(target.elts):
                item = self.apply_builtin("tuple_get", [value], stmt, attrs={"index": i})
                self.assign(t, item, stmt)
            return
        if isinstance(target, ast.Subscript):
            if self.is_array_expr(target.value):
                arr, idx = self.lower_array_index(target)
                if len(idx) != arr.type.ndim:
                    raise error(self.src, target, f"assignment to an array needs {arr.type.ndim}"
                                f" indices, got {len(idx)}", KernelTypeError)
                if isinstance(arr, StructArr):
                    return self.store_element(arr, idx, value, stmt)
                value = self.coerce_store(arr, value, stmt)
                self.block.append(ir.Store(arr, idx, value, self.loc(stmt)))
                return
            base = target.value
            idx = self.lower_indices(target.slice)
            current = self.lower_expr(base)
            new = self.apply_builtin("insert", [current] + idx + [value], stmt)
            return self.assign(base, new, stmt)
        if isinstance(target, ast.Attribute):
            current = self.lower_expr(target.value)
            if is_transform_part(current.type, target.attr):
                new = self.with_transform_part(current, target.attr, value, stmt)
                return self.assign(target.value, new, stmt)
            index = self.component_index(current.type, target.attr, target)
            new = self.apply_builtin("insert", [current, ir.Const(index, T.int32), value], stmt)
            return self.assign(target.value, new, stmt)
        raise error(self.src, target, "cannot assign to this expression", KernelSyntaxError)

    def bind(self, name, value, node):
        old = self.env.get(name)
        if old is not None and old.type != value.type:
            value = self.adapt_literal(value, old.type)
            if old.type != value.type:
                raise error(self.src, node, f"cannot assign a value of type "
                            f"{T.type_name(value.type)} to '{name}' of type "
                            f"{T.type_name(old.type)}", KernelTypeError)
        if isinstance(value, ir.Const) and value.literal and T.is_scalar(value.type):
            value = ir.Const(value.value, value.type)  # a named literal has its type fixed
        if self.is_fresh_temp(value):
            value.name = self.version_name(name)
            self.env[name] = value
            return
        v = self.new_version(name, value.type)
        self.block.append(ir.Assign(v, ir.Copy(value), self.loc(node)))
        self.env[name] = v

    def coerce_store(self, arr, value, node):
        want = arr.type.dtype
        value = self.adapt_literal(value, want)
        if value.type != want:
            raise error(self.src, node, f"cannot store a value of type {T.type_name(value.type)}"
                        f" into an array of {T.type_name(want)}", KernelTypeError)
        return value
