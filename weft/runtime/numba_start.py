"""Numba's CPU target, started with less work than Numba does on its own.

Numba loads its CPU registries the first time it compiles or loads a function. One of them
(``numba.np.arraymath``) imports ``scipy.linalg.cython_blas`` only to learn whether BLAS is
there, and that import runs all of ``scipy.linalg``'s package initialisation: about 0.13 s of a
0.3 s warm start on the machine this was measured on (``docs/performance.md``). weft's kernels
never call BLAS, so before the registries load, :func:`start` loads the ``cython_blas``
extension module by itself (10 ms) and registers it under its name; Numba's check then finds it
and BLAS stays available to Numba code (a later ``import scipy.linalg`` initialises the package
as usual). Without SciPy, or with ``scipy.linalg`` already imported, nothing is done.

The functions of generated CPU modules compile through :func:`generated_code_compiler`: Numba's
nopython pipeline with the passes of ``numba_passes`` (fewer blocks and statements; SSA
reconstruction and liveness in linear time, stop 53), without a C-callable wrapper, and without
``InlineClosureLikes``. That pass inlines closures, ``reduce`` calls, stencils and array
comprehensions, none of which generated code contains, and its clean-up
(``fixup_var_define_in_scope``, reaching definitions and liveness over every block) grows
quadratically with a function's size: without it, the adjoint of a 1,000-statement kernel
compiles in 71 s instead of 101 (``docs/performance.md``, stop 52). The machine code is the
same; Numba's cache and the programs that import a module ``weft transpile`` wrote (with
Numba's default pipeline) are unaffected. Generated CUDA code compiles through numba-cuda's
pipeline with the passes that leave its IR unchanged (:func:`compiling_generated_cuda_code`).
"""
from __future__ import annotations

import contextlib
import importlib.machinery
import importlib.util
import os
import sys

_NAME = "scipy.linalg.cython_blas"
_started = False
_compiler = None


def start():
    """Prepare the cheap BLAS check (once), before Numba's CPU registries load: at the first
    compile, not at a load from the disk cache (``diskcache.VerifiedCache.load_overload``)."""
    global _started
    if _started:
        return
    _started = True
    if _NAME not in sys.modules and "scipy.linalg" not in sys.modules:
        mod = _load_extension()
        if mod is not None:
            sys.modules[_NAME] = mod


def drop_dead_globals_when_unoptimised():
    """At Numba's level 0 (``NUMBA_OPT=0``), a function's final module loses its dead
    instructions and unreferenced globals before Numba looks for "dynamic globals".

    Numba lowers a global function (a ``@wp.func``, a helper of ``_wk``) as its object's process
    address, a ``numba.dynamic.globals`` variable, though a call never reads it. LLVM's
    optimiser drops the dead load and the variable; at level 0 they stay, and Numba will not
    cache a function that keeps one: every kernel calling a func or a helper was compiled again
    in every process, for weft's test suite (which compiles at level 0) as for a user who sets
    the level. Three passes at the end (variables out of their stack slots, dead code, dead
    globals: what any higher level runs too); installed once, at ``import weft``, for Numba's
    CPU code libraries."""
    from numba.core import codegen, config
    library = codegen.CPUCodeLibrary
    if config.OPT != 0 or getattr(library, "_weft_drops_dead_globals", False):
        return
    import llvmlite.binding as llvm
    if not hasattr(library, "_optimize_final_module") or \
            not hasattr(llvm, "create_new_module_pass_manager"):
        return  # (another Numba or llvmlite: as Numba does)
    optimise = library._optimize_final_module

    def _optimize_final_module(self):
        optimise(self)
        pm = llvm.create_new_module_pass_manager()
        pm.add_sroa_pass()  # (a variable assigned in several places holds it in a slot)
        pm.add_dead_code_elimination_pass()
        pm.add_global_dead_code_eliminate_pass()
        pto = llvm.create_pipeline_tuning_options()
        pto.speed_level = 0
        pm.run(self._final_module, llvm.create_pass_builder(self._codegen._tm, pto))

    library._optimize_final_module = _optimize_final_module
    library._weft_drops_dead_globals = True


def environments_without_imports():
    """Cached machine code rebuilds the environments of the functions it calls (Numba's
    ``referenced_envs``) without importing their modules.

    Numba rebuilds each environment from its module's name, importing the module for its
    globals. For a cached function that allocates, those are Numba's own implementation
    modules: loading the mesh refit imported ``numba.np.arrayobj`` and what it imports, 25-45
    ms of a warm geometry program that compiles nothing (``docs/performance.md``, stop 74).
    Nopython code reads only an environment's constants (the exceptions it raises); only
    object mode, which weft never compiles, reads the globals. So an environment whose module
    is not imported yet gets just the module's name as its globals (what keeps it cacheable)
    and its constants; one whose module is imported is rebuilt as Numba does. Installed once,
    at ``import weft``."""
    from numba.core import environment
    rebuild = environment._rebuild_env
    if getattr(rebuild, "_weft", False):
        return

    def _rebuild_env(modname, consts, env_name):
        env = environment.lookup_environment(env_name)
        if env is not None or modname is None or modname in sys.modules:
            return env if env is not None else rebuild(modname, consts, env_name)
        env = environment.Environment({"__name__": modname})
        env.consts[:] = consts
        env.env_name = env_name
        environment.Environment._memo[env_name] = env
        return env

    _rebuild_env._weft = True
    # pickled by reference as Numba's own (``Environment.__reduce__`` names the module's
    # attribute): the files written load with or without weft, and rebuild as the loader does
    _rebuild_env.__module__ = rebuild.__module__
    _rebuild_env.__qualname__ = rebuild.__qualname__
    environment._rebuild_env = _rebuild_env


def linking_modules_on_use():
    """Cached machine code loads without parsing the bitcode its callers would link.

    Numba's cache holds, beside each function's object code, the LLVM bitcode a later compile
    links into the functions that call it; loading parses that bitcode at once (about 1 ms
    each) and walks it for the names the library defines. A program whose code all comes
    from the cache links nothing, so here the bitcode is parsed when a compile first links
    the library (``_get_module_for_linking``), and the defined names come from the object
    code's ELF symbol table (:func:`elf_defined_symbols`: the same names, checked on every
    entry of the shipped store). Another object format is loaded as Numba loads it. Installed
    once, at ``import weft``; a warm geometry program loaded 17 libraries in 0.05 s, a third of
    it the bitcode (``docs/performance.md``, stop 74)."""
    import llvmlite.binding as ll
    from numba.core import codegen
    library = codegen.CPUCodeLibrary
    if getattr(library, "_weft_links_on_use", False) or \
            not hasattr(library, "_get_module_for_linking"):
        return
    unserialize = library._unserialize.__func__
    for_linking = library._get_module_for_linking

    def _unserialize(cls, codegen_, state):
        name, kind, data = state
        symbols = elf_defined_symbols(data[0]) if kind == "object" else None
        if symbols is None:
            return unserialize(cls, codegen_, state)
        self = codegen_.create_library(name)
        self.enable_object_caching()
        self._set_compiled_object(data[0])
        self._weft_bitcode = data[1]
        self._finalize_final_module()
        self._codegen._engine._defined_symbols |= symbols
        return self

    def _get_module_for_linking(self):
        bitcode = self.__dict__.pop("_weft_bitcode", None)
        if bitcode is not None:
            self._shared_module = ll.parse_bitcode(bitcode)
        return for_linking(self)

    library._unserialize = classmethod(_unserialize)
    library._get_module_for_linking = _get_module_for_linking
    library._weft_links_on_use = True


class _RandomIds:
    """Numba's ``FunctionIdentity._unique_ids`` drawing each id at random (63 bits) in place of
    counting from 1 in every process: see :func:`unique_function_ids`."""

    __slots__ = ()

    def __iter__(self):
        return self

    def __next__(self):
        return int.from_bytes(os.urandom(8), "little") >> 1


def unique_function_ids():
    """Every function Numba compiles in this process gets a symbol no other process's code has.

    Numba names a compiled function by its module, qualified name, argument types and an id
    counted from 1 in each process, so that two functions of one name (closures of one
    factory, the implementations an ``@overload`` returns) get distinct symbols. Code loaded
    from the disk cache keeps the names of the process that compiled it, with that process's
    ids, and two programs that run the same steps count alike: a function compiled here could
    get the name of one that cached code holds, with another body. LLVM binds a name once per
    process (both are ``linkonce_odr``, as Numba links callees), so cached code loaded after
    the fresh function ran the fresh body. Measured (stop 80, ``NUMBA_OPT=0``, where nothing is
    inlined): a cached function adding through an overload's lambda subtracted, after a second
    program compiled the subtracting lambda of the same factory first; a cached kernel calling
    ``wp.atomic_add`` ran ``atomic_sub`` (weft's eight atomic operations are lambdas of one
    factory). Drawn at random, an id is not reused across processes (nor across a ``fork``'s
    children, which would inherit a counter). Installed once, at ``import weft``: functions
    compiled before that keep Numba's count. numba-cuda keeps a counter of its own, not changed
    here."""
    from numba.core.bytecode import FunctionIdentity
    if not isinstance(FunctionIdentity._unique_ids, _RandomIds):
        FunctionIdentity._unique_ids = _RandomIds()


def elf_defined_symbols(obj):
    """The names of the functions and variables an ELF64 little-endian object defines (its
    symbol table's entries with a section, named, of no type, data or code), or None for
    another format."""
    import struct
    if obj[:4] != b"\x7fELF" or obj[4:6] != b"\x02\x01":
        return None
    shoff, = struct.unpack_from("<Q", obj, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", obj, 0x3A)
    names = set()
    for i in range(shnum):
        base = shoff + i * shentsize
        if struct.unpack_from("<I", obj, base + 4)[0] != 2:  # SHT_SYMTAB
            continue
        offset, size = struct.unpack_from("<QQ", obj, base + 0x18)
        link, = struct.unpack_from("<I", obj, base + 0x28)
        entsize, = struct.unpack_from("<Q", obj, base + 0x38)
        strings, = struct.unpack_from("<Q", obj, shoff + link * shentsize + 0x18)
        for at in range(offset + entsize, offset + size, entsize):  # (entry 0 is null)
            name, info, _, section = struct.unpack_from("<IBBH", obj, at)
            if section == 0 or name == 0 or info & 0xF > 2:  # undefined, unnamed, other
                continue
            start = strings + name
            names.add(obj[start:obj.index(b"\0", start)].decode())
    return names


def _load_extension():
    try:
        spec = importlib.util.find_spec("scipy")
        if spec is None or not spec.origin:
            return None
        folder = os.path.join(os.path.dirname(spec.origin), "linalg")
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = os.path.join(folder, "cython_blas" + suffix)
            if os.path.exists(path):
                ext = importlib.util.spec_from_file_location(_NAME, path)
                mod = importlib.util.module_from_spec(ext)
                ext.loader.exec_module(mod)
                return mod
    except Exception:  # any surprise: Numba imports the package itself, as without weft
        return None
    return None


def generated_code_compiler():
    """The Numba compiler class for the functions of generated CPU modules (see above)."""
    global _compiler
    if _compiler is None:
        from numba.core import compiler
        from numba.core.compiler_machinery import PassManager
        from numba.core.typed_passes import AnnotateTypes, IRLegalization, NativeLowering
        from numba.core.untyped_passes import InlineClosureLikes, IRProcessing, ReconstructSSA

        from .numba_lowering import DropPlainDels, install_kept_lowering, lowering_pass
        from .numba_passes import (AnnotateTypesUnforced, ReconstructSSAByMentions,
                                   compiling_generated_code, install_analyses)
        from .numba_simplify import SimplifyGeneratedCode

        install_analyses()
        install_kept_lowering()

        class GeneratedCodeCompiler(compiler.CompilerBase):
            """Numba's nopython pipeline less ``InlineClosureLikes``, with
            :class:`~weft.runtime.numba_simplify.SimplifyGeneratedCode` first, SSA by
            :class:`~weft.runtime.numba_passes.ReconstructSSAByMentions`, the linear
            live-variable analysis (:func:`~weft.runtime.numba_passes.compute_live_map`), a
            faster walk for statements' variables, and lowering that counts references only of
            values holding them (:class:`~weft.runtime.numba_lowering.DropPlainDels`)."""

            def __init__(self, typingctx, targetctx, library, args, return_type, flags,
                         locals):
                # no C-callable wrapper: generated functions are called from Python (the
                # CPython wrapper) and from compiled code (directly), never through a cfunc
                flags = flags.copy()
                flags.no_cfunc_wrapper = True
                super().__init__(typingctx, targetctx, library, args, return_type, flags,
                                 locals)

            # the two ways in (a function, its bytecode analysed here too; or IR)
            def compile_extra(self, func):
                with compiling_generated_code():
                    return super().compile_extra(func)

            def compile_ir(self, func_ir, lifted=(), lifted_from=None):
                with compiling_generated_code():
                    return super().compile_ir(func_ir, lifted, lifted_from)

            def define_pipelines(self):
                full = compiler.DefaultPassBuilder.define_nopython_pipeline(self.state)
                pm = PassManager(full.pipeline_name)
                for pss, about in full.passes:
                    if pss is IRProcessing:
                        pm.passes.append((SimplifyGeneratedCode, "simplify generated code"))
                    if pss is ReconstructSSA:
                        pm.passes.append((ReconstructSSAByMentions, about))
                    elif pss is NativeLowering:
                        pm.passes.append((lowering_pass(), about))
                    elif pss is AnnotateTypes:
                        pm.passes.append((AnnotateTypesUnforced, about))
                    elif pss is not InlineClosureLikes:
                        pm.passes.append((pss, about))
                    if pss is IRLegalization:
                        pm.passes.append((DropPlainDels, "drop the dels of plain values"))
                pm.finalize()
                return [pm]

        _compiler = GeneratedCodeCompiler
        from . import libm_tanh
        libm_tanh.install()  # float32 tanh: the C library's bits, compiled in (see there)
    return _compiler


def use_generated_code_compiler(module):
    """Compile every Numba function of generated CPU ``module`` (loaded, nothing compiled yet)
    with :func:`generated_code_compiler`; plain functions (``NUMBA_DISABLE_JIT``) are left."""
    from types import ModuleType

    from numba.core.registry import CPUDispatcher
    for value in vars(module).values():
        if isinstance(value, ModuleType):
            continue  # (``_wk``'s __getattr__ would import the geometry queries)
        value = getattr(value, "weft_chunk_of", value)  # a chunk function's dispatcher
        if isinstance(value, CPUDispatcher):
            value._compiler.pipeline_class = _CompilerAtFirstCompile
    return module


class _CompilerAtFirstCompile:
    """:func:`generated_code_compiler`'s class, made (its passes imported, Numba's analyses
    and lowering patched) at the first compile: a program whose kernels all load from the
    cache compiles nothing (4-6 ms of a warm start). Numba only instantiates its
    ``pipeline_class``."""

    def __new__(cls, *args, **kwargs):
        return generated_code_compiler()(*args, **kwargs)


_cuda_installed = False


@contextlib.contextmanager
def compiling_generated_cuda_code():
    """Within: the CUDA functions this thread compiles (numba-cuda's ``compile_ptx``, a
    generated CUDA module's first launch) are generated code, compiled with the passes of
    ``numba_passes`` that give Numba's own IR (:func:`_install_cuda_pipeline`)."""
    from .numba_passes import compiling_generated_code
    _install_cuda_pipeline()
    with compiling_generated_code():
        yield


def _cache_only_what_pickles():
    """numba-cuda's disk cache cannot pickle a kernel that links files beside its own code
    (fp16 shims; numba-cuda's reshape helpers, ``reshape_funcs.cu``, which weft's tile code no
    longer calls: :func:`weft.native.cuda_views.tile_view`): its save raises ``Cannot pickle
    CUDACodeLibrary with linking files`` and the launch fails. Such a kernel is not cached: it
    compiles again in each process. Once, for numba-cuda's CUDA caches; other kernels are
    cached as before."""
    try:
        from numba.cuda.dispatcher import NRT_LIBRARY, CUDACacheImpl
    except ImportError:  # (another numba-cuda)
        return
    check = CUDACacheImpl.check_cachable
    if getattr(check, "_weft", False):
        return

    def check_cachable(self, kernel):
        files = getattr(getattr(kernel, "_codelibrary", None), "_linking_files", None) or ()
        return not set(files) - {NRT_LIBRARY} and check(self, kernel)

    check_cachable._weft = True
    CUDACacheImpl.check_cachable = check_cachable


def _install_cuda_pipeline():
    """numba-cuda runs its own copy of Numba's core, with a pipeline its ``compile_cuda``
    hard-codes (``CUDACompiler``). Once: that pipeline, while generated code compiles, takes
    weft's SSA reconstruction for Numba's and drops ``InlineClosureLikes`` (see the module's
    text), and numba-cuda's liveness, statement walks and operator typing are weft's
    (``numba_passes.install_analyses``). Each gives Numba's own IR, so the PTX is numba-cuda's
    own (``tests/cuda/test_ptx_pipeline.py``; every corpus kernel's, checked once). The passes
    that change the IR (``SimplifyGeneratedCode``, ``DropPlainDels``: NVVM then schedules
    and allocates registers differently, which no test here can run) are the CPU's only.
    Other CUDA compiles keep numba-cuda's pipeline."""
    global _cuda_installed
    if _cuda_installed:
        return
    _cuda_installed = True
    import numba
    if numba.config.ENABLE_CUDASIM:  # the simulator runs Python: nothing compiles
        from .cudasim import install
        install()  # (its blocks' threads without a spinning overseer)
        return
    _cache_only_what_pickles()
    from . import numba_passes
    try:
        cuda_passes = numba_passes.for_cuda()
        from numba.cuda import compiler as cuda_compiler
        from numba.cuda.core import untyped_passes
        numbas = cuda_compiler.CUDACompiler.define_pipelines
    except (ImportError, AttributeError):  # another numba-cuda: its own pipeline, as before
        return
    if cuda_passes is None:
        return
    cuda_passes.install_analyses()
    from .numba_lowering import install_kept_lowering  # (numba.core's function types, shared)
    install_kept_lowering()

    def define_pipelines(self):
        pipelines = numbas(self)
        if not getattr(numba_passes._compiling, "depth", 0) or len(pipelines) != 1:
            return pipelines
        full = pipelines[0]
        pm = type(full)(full.pipeline_name)
        for pss, about in full.passes:
            if pss is untyped_passes.ReconstructSSA:
                pm.passes.append((cuda_passes.ReconstructSSAByMentions, about))
            elif pss is not untyped_passes.InlineClosureLikes:
                pm.passes.append((pss, about))
        pm.finalize()
        return [pm]

    cuda_compiler.CUDACompiler.define_pipelines = define_pipelines
