"""Threaded kernel launches without Numba's parallel transform.

A threaded CPU entry is two plain ``numba.njit`` functions (see
:meth:`weft.transpiler.targets.CpuParallel.launch`): the *chunk*, the kernel's loop over the
launch indices ``[_lo, _hi)``, and a small wrapper that allocates the per-thread accumulation
buffers, calls ``parallel_for(chunk, n, args)`` and sums the buffers. ``parallel_for`` hands the
chunk to Numba's threading layer directly (its ``numba_parallel_for``, the function parfors
call), one block of about ``n / threads`` indices per thread.

Why not ``numba.prange``: a parfor runs Numba's parfor passes (array analysis, fusion, the
gufunc outlining) on the whole kernel body and compiles the body into a gufunc that is linked,
optimised and emitted again inside its caller. The chunk is compiled once, as an ordinary
function, and the wrapper does not link it: it calls the chunk's machine code through a symbol
registered with LLVM (:func:`_publish`), which a cached wrapper re-registers before it is
loaded (Numba's ``reload_init``, :func:`reload_chunk`). The helpers a wrapper calls are
intrinsics, emitted into it: an ``@overload`` compiles a function of its own per signature.
Measured on a spring kernel (docs/performance.md, stop 29): the threaded forward compiled in
2.7 s as a parfor, 1.0 s now. It also steps around bugs of the parfor passes (Numba 0.68's
array analysis asserts on nested tuples of different lengths).
"""
from __future__ import annotations

import functools
import hashlib

import numba
from llvmlite import binding as llvm
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.core.datamodel import models
from numba.core.imputils import lower_constant
from numba.extending import intrinsic, register_model, typeof_impl

from ..core.diskcache import njit

_I32 = ir.IntType(32)
#: per-thread accumulation buffers are used while they take at most this many bytes in all
PRIVATE_BUDGET = 64 << 20
# the size of Numba's thread pool: the copies of the Python twins (``helpers``); compiled code
# reads the number of threads running (``_num_threads``) and checks thread ids against it
_POOL = numba.config.NUMBA_NUM_THREADS


def _num_threads(context, builder):
    """The number of threads Numba runs now (``numba.set_num_threads``), read in the compiled
    code from the threading layer (a cached kernel stays valid for any setting)."""
    intp = context.get_value_type(types.intp)
    return builder.call(cgutils.get_or_insert_function(
        builder.module, ir.FunctionType(intp, []), "get_num_threads"), [])


def _copies(context, builder):
    """Per-thread copies a launch uses: one per thread it runs but the first (which adds into
    the array itself); a thread without one adds atomically (the generated
    ``_w <= _acc.shape[0]`` test)."""
    threads = _num_threads(context, builder)
    one = threads.type(1)
    return builder.select(builder.icmp_signed(">", threads, one), builder.sub(threads, one),
                          threads.type(0))


def _symbol(dispatcher, argtys):
    """The name the chunk's compiled code is called by from other libraries: stable across
    processes (its module, which names its source's hash, its name, its argument types)."""
    fn = dispatcher.py_func
    key = hashlib.sha1(repr(tuple(argtys)).encode()).hexdigest()[:20]
    return f"weft_chunk.{fn.__module__}.{fn.__qualname__}.{key}"


def _publish(dispatcher, argtys):
    """Compile (or load from the disk cache) ``dispatcher`` for ``argtys`` and register its
    machine code under :func:`_symbol`'s name; returns its compile result."""
    argtys = tuple(argtys)
    cres = dispatcher.overloads.get(argtys)
    if cres is None:
        dispatcher.compile(argtys)
        cres = dispatcher.overloads[argtys]
    name = _symbol(dispatcher, argtys)
    if name not in _published:
        llvm.add_symbol(name, cres.library.get_pointer_to_function(cres.fndesc.llvm_func_name))
        _published.add(name)
    return cres


def reload_chunk(module, qualname, argtys):
    """Before a cached entry that launches a chunk is loaded (Numba's ``reload_init``): the
    chunk compiled or loaded and its symbol registered, so the entry's machine code links."""
    import sys
    ref = getattr(sys.modules.get(module), qualname, None)
    if ref is None:  # Numba cannot load cached code of a module missing there either
        raise RuntimeError(f"weft: the cached threaded kernel needs {module}.{qualname}, "
                           "which is not loaded; import its module first")
    _publish(getattr(ref, "dispatcher", ref), argtys)


_published = set()  # symbols registered in this process


#: Numba's ``NRT_MemInfo``: the reference count, the destructor and its argument, the data,
#: its size and the external allocator (numba/core/runtime/nrt.cpp), each a machine word
_MEMINFO_WORDS = 6


def _private_meminfo(context, builder, ary):
    """Array value ``ary`` with its meminfo replaced by a copy private to this thread's call
    (on its stack, the reference count 1, no destructor), or unchanged when it has none.

    Every view a kernel takes of an argument (``A[i]``, a tile loaded in place, a row a tile
    helper walks) increments and decrements its meminfo's reference count atomically. With
    one meminfo shared by every thread those counts are one cache line the cores take from each
    other at every view: a tiled copy of 8,192 16 x 16 tiles ran 1.5x slower on two threads
    than on one. The caller holds the array for the whole launch and a chunk returns every
    reference it takes (it returns nothing), so the private count never reaches zero and
    nothing is freed through it; the array's own count is untouched."""
    word = context.get_value_type(types.intp)
    mi = builder.extract_value(ary, 0)
    proxy = cgutils.alloca_once(builder, ir.ArrayType(word, _MEMINFO_WORDS))
    has = builder.icmp_unsigned("!=", mi, ir.Constant(mi.type, None))
    src = builder.bitcast(mi, word.as_pointer())
    with builder.if_then(has):
        for k in range(_MEMINFO_WORDS):
            builder.store(builder.load(builder.gep(src, [_I32(k)])),
                          builder.gep(proxy, [_I32(0), _I32(k)]))
        builder.store(word(1), builder.gep(proxy, [_I32(0), _I32(0)]))
        builder.store(word(0), builder.gep(proxy, [_I32(0), _I32(1)]))  # no destructor
    own = builder.bitcast(proxy, mi.type)
    return builder.insert_value(ary, builder.select(has, own, mi), 0)


def _block_function(context, module, cres, tupty, symbol):
    """The gufunc-ABI function the threading layer calls for each thread's share of blocks:
    ``void (char **args, intp *count, intp *steps, void *data)``; ``args[0]`` holds ``count``
    (lo, hi) pairs ``steps[0]`` bytes apart, ``data`` points at ``{args tuple, i32 error}``.
    It calls the chunk for each pair and sets the error word if a call raised."""
    name = f"weft_parallel_for.{cres.fndesc.mangled_name}"
    fn = module.globals.get(name)
    if fn is not None:
        return fn
    i8p = ir.IntType(8).as_pointer()
    intp = context.get_value_type(types.intp)
    fnty = ir.FunctionType(ir.VoidType(), [i8p.as_pointer(), intp.as_pointer(),
                                           intp.as_pointer(), i8p])
    fn = ir.Function(module, fnty, name=name)
    fn.linkage = "internal"
    args, dims, steps, data = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    sig = cres.signature
    chunk_ty = context.call_conv.get_function_type(sig.return_type, sig.args)
    chunk = cgutils.get_or_insert_function(module, chunk_ty, symbol)
    slot_ty = ir.LiteralStructType([context.get_value_type(tupty), _I32])
    slot = b.bitcast(data, slot_ty.as_pointer())
    tup = b.load(b.gep(slot, [_I32(0), _I32(0)]))
    elems = [b.extract_value(tup, i) for i in range(len(tupty))]
    elems = [_private_meminfo(context, b, e) if isinstance(t, types.Array) else e
             for t, e in zip(tupty, elems)]
    base, count, step = b.load(args), b.load(dims), b.load(steps)
    with cgutils.for_range(b, count) as loop:
        p = b.bitcast(b.gep(base, [b.mul(loop.index, step)]), intp.as_pointer())
        lo = b.load(p)
        hi = b.load(b.gep(p, [intp(1)]))
        status, _ = context.call_conv.call_function(b, chunk, sig.return_type, sig.args,
                                                    [lo, hi] + elems)
        with b.if_then(status.is_error, likely=False):
            b.store(_I32(1), b.gep(slot, [_I32(0), _I32(1)]))
    b.ret_void()
    return fn


class ChunkRef:
    """A chunk function as generated modules hold it (``@_wk.chunk`` over its ``njit``): what
    ``parallel_for`` takes. Compiled code sees it as a type naming the dispatcher, whose value
    is nothing: a dispatcher itself is lowered as the address of the Python object, which
    Numba's disk cache refuses ("uses dynamic globals"). Called from Python, it is the
    function."""

    __slots__ = ("dispatcher",)

    def __init__(self, dispatcher):
        self.dispatcher = dispatcher

    def __call__(self, *args):
        return self.dispatcher(*args)

    @property
    def weft_chunk_of(self):
        return self.dispatcher

    def __getattr__(self, name):
        return getattr(self.dispatcher, name)


def chunk(dispatcher):
    """The decorator of a generated chunk function (outermost)."""
    return ChunkRef(dispatcher)


class ChunkType(types.Dummy):
    def __init__(self, dispatcher):
        self.dispatcher = dispatcher
        fn = getattr(dispatcher, "py_func", dispatcher)
        super().__init__(f"chunk({fn.__module__}.{fn.__qualname__}@{id(dispatcher):x})")


register_model(ChunkType)(models.OpaqueModel)


@typeof_impl.register(ChunkRef)
def _typeof_chunk(val, c):
    return ChunkType(val.dispatcher)


@lower_constant(ChunkType)
def _lower_chunk(context, builder, ty, pyval):
    return context.get_dummy_value()


def parallel_for_py(chunk, n, args):
    """:func:`parallel_for` in Python (generated code run without compiling,
    ``NUMBA_DISABLE_JIT``): one block on this thread."""
    chunk(0, n, *args)


def _launch(context, builder, disp, chunk_args, tupty, tup, nval):
    """Code running chunk ``disp`` (compiled for ``chunk_args``: lo, hi, then the types of
    tuple ``tupty``) over ``[0, nval)`` with the arguments in tuple value ``tup``."""
    csig_args = tuple(chunk_args)
    # the chunk is called by a symbol registered with LLVM, not linked in: linking would
    # optimise and emit its whole code again inside this library
    cres = _publish(disp, csig_args)
    fn = disp.py_func
    context.active_code_library._reload_init.add(functools.partial(
        reload_chunk, fn.__module__, fn.__qualname__, tuple(csig_args)))
    mod = builder.module
    block = _block_function(context, mod, cres, tupty, _symbol(disp, csig_args))
    intp = context.get_value_type(types.intp)
    i8p = ir.IntType(8).as_pointer()
    threads = _num_threads(context, builder)
    nb = builder.select(builder.icmp_signed("<", nval, threads), nval, threads)
    nb = builder.select(builder.icmp_signed("<", nb, intp(1)), intp(1), nb)
    sched = builder.alloca(intp, size=builder.mul(nb, intp(2)))
    with cgutils.for_range(builder, nb) as loop:
        r = loop.index
        p = builder.gep(sched, [builder.mul(r, intp(2))])
        builder.store(builder.sdiv(builder.mul(r, nval), nb), p)
        builder.store(builder.sdiv(builder.mul(builder.add(r, intp(1)), nval), nb),
                      builder.gep(p, [intp(1)]))
    slot_ty = ir.LiteralStructType([context.get_value_type(tupty), _I32])
    slot = cgutils.alloca_once(builder, slot_ty)
    builder.store(tup, builder.gep(slot, [_I32(0), _I32(0)]))
    err = builder.gep(slot, [_I32(0), _I32(1)])
    builder.store(_I32(0), err)
    argv = cgutils.alloca_once(builder, i8p)
    builder.store(builder.bitcast(sched, i8p), argv)
    dimv = cgutils.alloca_once(builder, intp, size=2)
    builder.store(nb, dimv)
    builder.store(intp(1), builder.gep(dimv, [intp(1)]))
    stepv = cgutils.alloca_once(builder, intp, size=2)
    builder.store(intp(2 * context.get_abi_sizeof(intp)), stepv)
    builder.store(intp(0), builder.gep(stepv, [intp(1)]))
    launch = cgutils.get_or_insert_function(
        mod, ir.FunctionType(ir.VoidType(), [i8p] * 5 + [intp] * 3),
        "numba_parallel_for")
    builder.call(launch, [builder.bitcast(block, i8p), builder.bitcast(argv, i8p),
                          builder.bitcast(dimv, i8p), builder.bitcast(stepv, i8p),
                          builder.bitcast(slot, i8p), intp(0), intp(1),
                          threads])
    with builder.if_then(builder.icmp_unsigned("!=", builder.load(err), _I32(0)),
                         likely=False):
        context.call_conv.return_user_exc(
            builder, RuntimeError, ("a kernel thread raised an exception",))


@intrinsic
def parallel_for(typingctx, chunk, n, args):
    """``chunk(lo, hi, *args)`` over ``[0, n)``, split in ``min(n, threads)`` blocks of
    consecutive indices run by the threads of Numba's pool (the calling thread is thread 0);
    ``RuntimeError`` after the launch if a block raised. An intrinsic, not an ``overload``:
    an overload costs a compile of its own for every signature."""
    if not isinstance(chunk, ChunkType) or not isinstance(args, types.BaseTuple):
        return None
    disp = types.Dispatcher(chunk.dispatcher)
    argtys = (types.int64, types.int64) + tuple(args.types)
    csig = typingctx.resolve_function_type(disp, argtys, {})
    if csig is None:
        raise TypeError(f"parallel_for: {chunk} cannot take {argtys}")

    def codegen(context, builder, signature, llargs):
        _, nval, tup = llargs
        nval = context.cast(builder, nval, signature.args[1], types.intp)
        _launch(context, builder, chunk.dispatcher, csig.args, args, tup, nval)
        return context.get_dummy_value()

    return types.none(chunk, n, args), codegen


# -- the per-thread copies' memory, kept between launches -------------------------------------
#
# An adjoint launch with per-thread copies of an array (``private_buffer``) needs (threads - 1)
# times the array's bytes, zeroed, for the launch only. Allocated anew each launch, a copy of a
# few MB came from the C library's ``mmap`` or its heap by the process's history: fresh pages
# to fault in and, at the ``munmap``, the other cores' address translations flushed (3 ms of a
# 3.4 ms tile MLP backward, docs/performance.md, stop 68). The buffers are kept here instead: a
# launch takes one of the size it needs (or a new one), ``reduce_private`` gives it back. The
# compiled code calls these two functions by symbol (a cached entry links them in any process);
# a launch that raises before it gives its buffer back leaves that buffer out of the pool.

#: bytes of free buffers kept for later launches (beyond it, a buffer given back is released)
POOL_BYTES = 2 * PRIVATE_BUDGET
_pool = {}     # size in bytes -> [free buffer, ...]
_lent = {}     # address -> (buffer, size in bytes)
_kept = [0]    # bytes in _pool


def _take(nbytes):
    """The address of a free buffer of ``nbytes`` (32-byte aligned), now lent; 0 if none can be
    made (the launch then allocates as before)."""
    try:
        free = _pool.get(nbytes)
        if free:
            buf = free.pop()
            _kept[0] -= nbytes
        else:
            import numpy as np
            raw = np.empty(nbytes + 32, np.uint8)
            start = (-raw.ctypes.data) % 32
            buf = raw[start:start + nbytes]
        address = buf.ctypes.data
        _lent[address] = (buf, nbytes)
        return address
    except BaseException:  # (MemoryError, an interrupt: never out of a callback)
        return 0


def _give(address):
    """A lent buffer given back: kept while the pool holds under ``POOL_BYTES``."""
    try:
        lent = _lent.pop(address, None)
        if lent is not None and _kept[0] + lent[1] <= POOL_BYTES:
            _pool.setdefault(lent[1], []).append(lent[0])
            _kept[0] += lent[1]
    except BaseException:
        pass


def _register_pool():
    import ctypes
    take = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_int64)(_take)
    give = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(_give)
    _callbacks.extend([take, give])  # (alive for the process: compiled code calls them)
    llvm.add_symbol("weft_private_take", ctypes.cast(take, ctypes.c_void_p).value)
    llvm.add_symbol("weft_private_give", ctypes.cast(give, ctypes.c_void_p).value)


_callbacks = []
_register_pool()


def _pool_function(builder, name, ret, args):
    return cgutils.get_or_insert_function(builder.module, ir.FunctionType(ret, args), name)


@intrinsic
def private_buffer(typingctx, a, ok):
    """``np.zeros(((threads - 1) if ok else 0,) + a.shape, a.dtype)`` (``np.zeros((0, 0),
    np.float32)`` for None), made in the caller's code (Numba's ``np.zeros`` compiles three
    functions of its own for every array type): a buffer of the pool above when it has rows
    (an array without a meminfo: nothing counts references to it, ``reduce_private`` gives it
    back), else allocated by the NRT."""
    if isinstance(a, types.NoneType):
        arrty = types.Array(types.float32, 2, "C")
    elif isinstance(a, types.Array):
        arrty = types.Array(a.dtype, a.ndim + 1, "C")
    else:
        return None

    def codegen(context, builder, sig, args):
        intp = context.get_value_type(types.intp)
        if isinstance(a, types.NoneType):
            out, nbytes = _new_array(context, builder, arrty, [intp(0), intp(0)])
            return out._getvalue()
        ary = context.make_array(a)(context, builder, args[0])
        rows = builder.select(context.cast(builder, args[1], sig.args[1], types.boolean),
                              _copies(context, builder), intp(0))
        shapes = [rows] + cgutils.unpack_tuple(builder, ary.shape, a.ndim)
        itemsize = intp(context.get_abi_sizeof(context.get_data_type(arrty.dtype)))
        nbytes = itemsize
        for dim in shapes:
            nbytes = builder.mul(nbytes, dim)
        i8p = ir.IntType(8).as_pointer()
        null = ir.Constant(i8p, None)
        slot = cgutils.alloca_once_value(builder, null)
        with builder.if_then(builder.icmp_signed(">", nbytes, intp(0))):
            take = _pool_function(builder, "weft_private_take", i8p, [ir.IntType(64)])
            builder.store(builder.call(take, [nbytes]), slot)
        got = builder.load(slot)
        result = cgutils.alloca_once(builder, context.get_value_type(arrty))
        with builder.if_else(builder.icmp_unsigned("!=", got, null)) as (pooled, fresh):
            with pooled:
                out, _ = _c_array(context, builder, arrty, shapes, lambda size: (got, None))
                cgutils.memset(builder, out.data, nbytes, 0)
                builder.store(out._getvalue(), result)
            with fresh:
                out, size = _new_array(context, builder, arrty, shapes)
                cgutils.memset(builder, out.data, size, 0)
                builder.store(out._getvalue(), result)
        return builder.load(result)

    return arrty(a, ok), codegen


def _new_array(context, builder, arrty, shapes):
    """``(array, its size in bytes)``: a new C-contiguous array of type ``arrty`` and shape
    ``shapes`` (intp values, not negative, their product's bytes within memory: the caller
    checked them), allocated by the NRT as ``np.empty`` is. Numba's ``_empty_nd_impl`` calls
    a compiled allocator function of ``numba.np.arrayobj``, whose environment a cached entry
    rebuilds at load by importing that module (with its dependencies, 25-55 ms of every warm
    start): this emits the allocation directly."""
    def allocate(size):
        meminfo = context.nrt.meminfo_alloc_aligned(builder, size=size, align=32)
        return context.nrt.meminfo_data(builder, meminfo), meminfo
    return _c_array(context, builder, arrty, shapes, allocate)


def _c_array(context, builder, arrty, shapes, memory):
    """``(array, its size in bytes)``: a C-contiguous array of type ``arrty`` and shape
    ``shapes`` on the memory ``memory(size)`` gives (``(data pointer, meminfo or None)``)."""
    from numba.np.arrayobj import populate_array   # (compile time only)
    intp = context.get_value_type(types.intp)
    itemsize = intp(context.get_abi_sizeof(context.get_data_type(arrty.dtype)))
    strides, size = [], itemsize
    for dim in reversed(shapes):
        strides.append(size)
        size = builder.mul(size, dim)
    data, meminfo = memory(size)
    ary = context.make_array(arrty)(context, builder)
    populate_array(ary, data=builder.bitcast(data, ary.data.type),
                   shape=cgutils.pack_array(builder, shapes),
                   strides=cgutils.pack_array(builder, strides[::-1]), itemsize=itemsize,
                   meminfo=meminfo)
    return ary, size


_REDUCE_BLOCK = 2048  # elements of ``a`` (8 KiB of float32) that stay in L1 across the copies


@njit(error_model="numpy", nogil=True)
def _reduce_rows_py(lo, hi, a, acc):
    """Elements [lo, hi) of the flat ``a`` plus its copies ``acc[w]``, in ``w`` order. By
    blocks: each copy's part of a block is added to the block in turn, which makes for every
    element the same additions in the same order as summing it over the copies at once, in
    loops LLVM vectorises (measured: 31 against 56-100 us for one copy of 49,152 floats)."""
    for b in range(lo, hi, _REDUCE_BLOCK):
        e = min(b + _REDUCE_BLOCK, hi)
        for w in range(acc.shape[0]):
            row = acc[w]
            for i in range(b, e):
                a[i] += row[i]


_reduce_rows = chunk(_reduce_rows_py)


def _reduce_any(a, acc):
    for w in range(acc.shape[0]):
        a += acc[w]


@intrinsic
def reduce_private(typingctx, a, acc):
    """``a += acc[0] + acc[1] + ...`` (in that order, element by element): a C-contiguous
    ``a`` and its copies as flat views, summed by the threads (:func:`parallel_for` over
    ``_reduce_rows``); others in a loop; nothing for None. Emitted into the caller, as
    :func:`private_buffer` is."""
    if isinstance(a, types.NoneType):
        return types.none(a, acc), lambda context, builder, sig, args: \
            context.get_dummy_value()
    if not isinstance(a, types.Array) or not isinstance(acc, types.Array):
        return None
    sig = types.none(a, acc)
    if a.layout != "C":
        def any_layout(context, builder, sig, args):
            context.compile_internal(builder, _reduce_any, sig, args)
            _give_back(builder, context.make_array(acc)(context, builder, args[1]))
            return context.get_dummy_value()
        return sig, any_layout
    flat = types.Array(a.dtype, 1, "C")
    rows = types.Array(a.dtype, 2, "C")
    tupty = types.Tuple((flat, rows))
    csig = typingctx.resolve_function_type(types.Dispatcher(_reduce_rows_py),
                                           (types.int64, types.int64, flat, rows), {})

    def codegen(context, builder, sig, args):
        from numba.np.arrayobj import populate_array
        src = context.make_array(a)(context, builder, args[0])
        cps = context.make_array(acc)(context, builder, args[1])
        n = src.nitems
        w = cgutils.unpack_tuple(builder, cps.shape, acc.ndim)[0]
        with builder.if_then(builder.icmp_signed(">", w, w.type(0))):
            # views over the same memory, borrowed for the call
            fv = context.make_array(flat)(context, builder)
            populate_array(fv, data=src.data, shape=cgutils.pack_array(builder, [n]),
                           strides=cgutils.pack_array(builder, [src.itemsize]),
                           itemsize=src.itemsize, meminfo=src.meminfo)
            rv = context.make_array(rows)(context, builder)
            populate_array(rv, data=cps.data, shape=cgutils.pack_array(builder, [w, n]),
                           strides=cgutils.pack_array(
                               builder, [builder.mul(n, cps.itemsize), cps.itemsize]),
                           itemsize=cps.itemsize, meminfo=cps.meminfo)
            tup = context.make_tuple(builder, tupty, [fv._getvalue(), rv._getvalue()])
            _launch(context, builder, _reduce_rows_py, csig.args, tupty, tup, n)
        _give_back(builder, cps)
        return context.get_dummy_value()

    return sig, codegen


def _give_back(builder, copies):
    """The copies' buffer back to the pool (:func:`private_buffer`'s, without a meminfo)."""
    i8p = ir.IntType(8).as_pointer()
    pooled = builder.and_(
        builder.icmp_unsigned("==", copies.meminfo, ir.Constant(copies.meminfo.type, None)),
        builder.icmp_unsigned("!=", copies.data, ir.Constant(copies.data.type, None)))
    with builder.if_then(pooled):
        give = _pool_function(builder, "weft_private_give", ir.VoidType(), [i8p])
        builder.call(give, [builder.bitcast(copies.data, i8p)])


@intrinsic
def private_ok(typingctx, a):
    """Whether the launch's per-thread copies of ``a`` (:func:`_copies`) fit
    ``PRIVATE_BUDGET`` (False for None)."""
    if isinstance(a, types.NoneType):
        return types.boolean(a), lambda context, builder, sig, args: \
            ir.Constant(ir.IntType(1), 0)
    if not isinstance(a, types.Array):
        return None

    def codegen(context, builder, sig, args):
        ary = context.make_array(a)(context, builder, args[0])
        size = builder.mul(builder.mul(ary.nitems, ary.itemsize), _copies(context, builder))
        return builder.icmp_signed("<=", size, size.type(PRIVATE_BUDGET))

    return types.boolean(a), codegen


def _dims(dim):
    return isinstance(dim, types.BaseTuple) and len(dim) > 0 and \
        all(isinstance(t, types.Integer) for t in dim)


def _product(context, builder, dim, value, start):
    n = context.get_constant(types.int64, 1)
    for k in range(start, len(dim)):
        v = builder.extract_value(value, k)
        n = builder.mul(n, context.cast(builder, v, dim[k], types.int64))
    return n


@intrinsic
def launch_size(typingctx, dim):
    """``_portable.launch_size`` (the product of the launch dimensions ``dim``), emitted into
    the caller: as a compiled helper it cost every new cache a compile of its own (64 ms)."""
    if not _dims(dim):
        return None

    def codegen(context, builder, sig, args):
        return _product(context, builder, dim, args[0], 0)

    return types.int64(dim), codegen


@intrinsic
def first_index(typingctx, tid, dim):
    """``_portable.first_index`` (flat thread ``tid``'s first launch index: ``tid`` itself in a
    1-D launch), emitted into the caller (as a compiled helper: 99 ms of every new cache).
    ``tid`` is a launch index (not negative), so the truncating division is Python's."""
    if not (_dims(dim) and isinstance(tid, types.Integer)):
        return None

    def codegen(context, builder, sig, args):
        t = context.cast(builder, args[0], tid, types.int64)
        if len(dim) == 1:
            return t
        return builder.sdiv(t, _product(context, builder, dim, args[1], 1))

    return types.int64(tid, dim), codegen
