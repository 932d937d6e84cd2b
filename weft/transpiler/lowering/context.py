"""The state of lowering one kernel or func body, and the operations every feature module and
every declaration (:mod:`weft.stdlib.registry`) lowers with.

The feature modules (:mod:`.stmts`, :mod:`.exprs`, :mod:`.calls`, :mod:`.structs`,
:mod:`.literals`) are functions of this context; the methods below are the small API they and
the stdlib's special forms share. All working state is declared in ``__init__``.
"""
from __future__ import annotations

from ...core import types as T
from ...core.errors import KernelTypeError
from ...stdlib import ir
from ...stdlib.exprs import NameGen
from ..prune import names_in
from ..source import error


class Lowering:
    """Lowers one kernel or func body (``kind`` is ``"kernel"`` or ``"func"``)."""

    def __init__(self, src, kind, specializer):
        self.src = src                   # the parsed source (transpiler.state.Source)
        self.kind = kind
        self.specializer = specializer   # specialises called funcs, shared by one compilation
        fn = src.pyfunc
        self.globals = dict(fn.__globals__)  # names outside the body: globals, then closure
        if fn.__closure__:
            for name, cell in zip(fn.__code__.co_freevars, fn.__closure__):
                try:
                    self.globals[name] = cell.cell_contents
                except ValueError:
                    pass
        taken = names_in(src.tree)
        taken |= {a.arg for a in src.tree.args.args}
        self.names = NameGen(taken)      # fresh temporaries, never a user's name
        self.versions = {}               # user name -> last version number (SSA renaming)
        self.env = {}                    # user name -> its current Var, Const or StructRef
        self.block = []                  # IR statements of the block being lowered
        self.params = []                 # parameter Vars (struct members split out)
        self.callees = []                # FuncIR called, in first-call order
        self.ret_type = None             # funcs: the returned type (None: returns nothing)
        self.ret_struct = None           # funcs returning a struct (or a tuple holding one):
        #                                  its layout (lowering/structs.pack_struct_return)
        self.tid_dims = 0                # kernels: how many indices wp.tid() was unpacked into
        self.tid_vars = {}               # Var -> launch axis (None: the first launch index)
        self.last_temp = None            # the temporary emitted last (renamed when bound)
        self.defined_in_loops = set()    # names first assigned inside a loop body
        self.loop_returned = None        # set by a loop that a ``return`` leaves
        self.struct_markers = {}         # (name, struct type) -> its StructRef
        self.const_vars = {}             # id(Var) -> (Var, value): locals assigned a constant
        self.literal_vars = set()        # id(Var) of those assigned a Python literal
        self.static_locals = {}          # loop variables of loops unrolled for wp.static
        self.callables = {}              # locals bound to funcs (f = square; g = wp.grad(f))
        self.tile_views = {}             # id(Var) -> (Var of the tile it views, how): tiles
        # taken as views of another (t[i], wp.tile_view), whose in-place changes write back
        self.tile_params = {}            # funcs: tile parameters, name -> type, and those
        self.inplace_params = []         # changed in place, in order (lowering/tile_params)
        self.writes_back = ()            # ... and what the func returns for them (FuncIR's)

    def changed_in_place(self, name):
        """Tiles: local ``name`` was changed in place (``tiles.store_back``); a func records its
        tile parameters so changed, which the caller's tiles then take (``tile_params``)."""
        if name in self.tile_params and name not in self.inplace_params:
            self.inplace_params.append(name)

    # ------------------------------------------------------------------------ naming, errors
    def loc(self, node):
        return ir.Loc(self.src.filename, getattr(node, "lineno", self.src.first_line),
                      getattr(node, "col_offset", 0) + self.src.col_offset)

    def fail(self, node, msg, cls=KernelTypeError):
        """A located error (raise it): ``raise ctx.fail(node, "...")``."""
        return error(self.src, node, msg, cls)

    def version_name(self, name):
        while True:
            n = self.versions.get(name, -1) + 1
            self.versions[name] = n
            cand = name if n == 0 else f"{name}_{n}"
            if cand not in self.names.taken or n == 0:
                self.names.taken.add(cand)
                return cand

    def new_version(self, name, type_):
        return ir.Var(self.version_name(name), type_)

    def new_temp(self, type_, hint="t"):
        return ir.Var(self.names.fresh(hint), type_)

    # ------------------------------------------------------------------------ IR building
    def add(self, stmt):
        self.block.append(stmt)

    def emit(self, expr, type_, node):
        """Assign IR expression ``expr`` to a new temporary of ``type_`` and return it."""
        v = self.new_temp(type_)
        self.block.append(ir.Assign(v, expr, self.loc(node)))
        self.last_temp = v
        return v

    def is_fresh_temp(self, v):
        if isinstance(v.type, T.ArrayType) and v.type.local and self.block and \
                isinstance(self.block[-1], ir.Assign) and self.block[-1].dst is v:
            return True  # name the buffer after the user's variable
        return (v is self.last_temp and self.block and isinstance(self.block[-1], ir.Assign)
                and self.block[-1].dst is v and not isinstance(v.type, T.ArrayType))

    def in_block(self, env):
        """Context manager: lower into a fresh statement list starting from ``env``."""
        return _Block(self, env)

    # ------------------------------------------------------------------------ the shared API
    # (thin entries into the feature modules, for them and for the stdlib's special forms)
    def expr(self, node, allow_void=False):
        from .exprs import lower_expr
        return lower_expr(self, node, allow_void)

    def condition(self, node):
        from .exprs import lower_condition
        return lower_condition(self, node)

    def apply(self, builtin, args, node, attrs=None):
        """Apply a primitive builtin (the object, or the registry name of an internal one)."""
        from .calls import apply_builtin
        return apply_builtin(self, builtin, args, node, attrs)

    def struct_array(self, t, members):
        """An array of structs ``t`` (an ArrayType of a struct) from one array per member
        (``{member: array operand or nested struct array}``), as struct parameters are split."""
        from .structs import StructArr
        return StructArr(t, members)

    def struct_value(self, t, members):
        """A value of struct type ``t`` from one operand per member (``{member: operand}``)."""
        from .structs import StructVal
        return StructVal(t, members)

    def call_func(self, func, node, args=None, n_given=None):
        from .calls import call_func
        return call_func(self, func, node, args, n_given)

    def call_overloaded(self, func, node):
        from .calls import call_overloaded
        return call_overloaded(self, func, node)

    def choose_overload(self, func, args, node):
        from .calls import choose_overload
        return choose_overload(self, func, args, node)

    def grad_call(self, func, node):
        from .calls import grad_call
        return grad_call(self, func, node)

    def bind(self, name, value, node):
        from .binding import bind
        return bind(self, name, value, node)

    def lower_stmt(self, stmt):
        from .stmts import lower_stmt
        return lower_stmt(self, stmt)

    def lower_block(self, stmts):
        """Lower ``stmts`` into the current block; their :class:`~.stmts.Exit` records."""
        from .stmts import lower_block
        return lower_block(self, stmts)

    def assign(self, target, value, node):
        from .binding import assign
        return assign(self, target, value, node)

    def store_coerced(self, arr, value, node):
        from .binding import coerce_store
        return coerce_store(self, arr, value, node)

    def with_component(self, value, attr, new, node):
        """A copy of ``value`` with component ``attr`` (``v.x``, ``t.p``) set to ``new``."""
        from .exprs import with_component
        return with_component(self, value, attr, new, node)

    def construct_struct(self, cls, node):
        from .structs import construct_struct
        return construct_struct(self, cls, node)

    def array_index(self, node):
        """``a[i, j]`` -> (the array, [index operands])."""
        from .exprs import lower_array_index
        return lower_array_index(self, node)

    def is_array_expr(self, node):
        from .exprs import is_array_expr
        return is_array_expr(self, node)

    def resolve(self, node):
        from .literals import resolve_global
        return resolve_global(self, node)

    def adapt_literal(self, x, want):
        from .literals import adapt_literal
        return adapt_literal(x, want)

    def constant(self, value, node):
        from .literals import python_constant
        return python_constant(self, value, node)

    def static_value(self, node, what):
        from .literals import static_value
        return static_value(self, node, what)

    def static_call(self, node):
        """The operand of ``wp.static(expr)`` (``node``, the call), evaluated when the kernel was
        declared or now (:mod:`weft.transpiler.statics`)."""
        from ..statics import static_value
        from .literals import static_constant
        return static_constant(self, static_value(self, node), node)


class _Block:
    def __init__(self, ctx, env):
        self.ctx, self.env = ctx, env

    def __enter__(self):
        self.saved = (self.ctx.block, self.ctx.env)
        self.ctx.block, self.ctx.env = [], dict(self.env)
        return self.ctx.block

    def __exit__(self, *exc):
        self.ctx.block, self.ctx.env = self.saved
        return False
