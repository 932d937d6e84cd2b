"""Where weft keeps compiled code on disk, and why that directory can be trusted.

weft imports Python modules from its cache directory and Numba loads machine code from it, so
the directory is a trust boundary: whoever can write there can run code as you. The rules:

- The directory is ``$WEFT_CACHE_DIR``, else ``$XDG_CACHE_HOME/weft``, else ``~/.cache/weft``;
  weft creates it with mode 0700.
- An existing directory is used only if it is a real directory (not a symbolic link), owned by
  the current user and not writable by group or others. Otherwise weft warns once and falls back
  to the default directory (when that one passes) or to a new private temporary directory.
- A trusted directory that is not writable (a read-only cache, or ``WEFT_CACHE_READONLY=1``, say
  for a cache built into a container image) is still read: cached modules and machine code are
  used, new kernels compile in memory.
- With no usable directory at all, every kernel compiles in memory (no caching), with one
  warning.
- Numba's cache files (index and object code) are written with a SHA-256 of their contents and
  verified before Numba reads them: a truncated, garbled or foreign file is ignored (with a
  warning) and the function recompiled, never handed to the loader.

:func:`njit` is ``numba.njit`` with these rules (weft's own helpers use it, so they never need a
writable install directory); :func:`protect` gives the functions of a loaded generated module
the same verified cache.
"""
from __future__ import annotations

import contextlib
import hashlib
import os
import stat
import tempfile
import types
import warnings

import numba
from numba.core import caching, dispatcher

__all__ = ["cache_root", "writable", "njit", "protect", "register_shipped", "CacheWarning"]


class CacheWarning(UserWarning):
    """The cache directory was refused, or a damaged cache entry was rebuilt."""


_state = {}  # requested path -> (root or None, writable)


def _default_root():
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "weft")


def _why_untrusted(path):
    """None when ``path`` (existing) may be used, else the reason it may not."""
    try:
        st = os.lstat(path)
    except OSError as exc:
        return f"cannot inspect it ({exc.strerror})"
    if stat.S_ISLNK(st.st_mode):
        return "it is a symbolic link"
    if not stat.S_ISDIR(st.st_mode):
        return "it is not a directory"
    if hasattr(os, "getuid") and st.st_uid != os.getuid():
        return "it is owned by another user"
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return "it is writable by group or others"
    return None


def _prepare(path):
    """Create ``path`` (0700) if missing; return the reason it cannot be used, or None."""
    if not os.path.lexists(path):
        try:
            os.makedirs(path, mode=0o700, exist_ok=True)
        except OSError as exc:
            return f"cannot create it ({exc.strerror})"
    return _why_untrusted(path)


def cache_root():
    """The trusted cache directory, or None when weft must compile in memory."""
    wanted = os.environ.get("WEFT_CACHE_DIR") or _default_root()
    hit = _state.get(wanted)
    if hit is None:
        hit = _state[wanted] = _resolve(wanted)
    return hit[0]


def writable():
    """Whether new entries can be written into :func:`cache_root`."""
    cache_root()
    wanted = os.environ.get("WEFT_CACHE_DIR") or _default_root()
    root, can_write = _state[wanted]
    return root is not None and can_write


def _resolve(wanted):
    why = _prepare(wanted)
    if why is None:
        read_only = os.environ.get("WEFT_CACHE_READONLY", "") not in ("", "0")
        return wanted, not read_only and os.access(wanted, os.W_OK | os.X_OK)
    fallback = _default_root()
    if fallback != wanted and _prepare(fallback) is None and os.access(fallback, os.W_OK):
        where = fallback
    else:
        try:
            where = tempfile.mkdtemp(prefix="weft-cache-")  # created 0700
        except OSError:
            where = None
    warnings.warn(f"weft: not using the cache directory {wanted!r}: {why}; "
                  + (f"using {where!r} instead" if where else "compiling in memory"),
                  CacheWarning, stacklevel=3)
    return where, where is not None


# ---------------------------------------------------------------------------- Numba's files

_MAGIC = b"weft-nb1"


@contextlib.contextmanager
def _locked(path):
    """An exclusive lock on ``path`` (created) between processes, where the OS has ``flock``."""
    try:
        import fcntl
    except ImportError:  # not POSIX: Numba's own, unlocked behaviour
        yield
        return
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def write_replacing(target, data):
    """Write ``data`` (bytes) to ``target`` atomically: through a temporary file beside it (a
    reader sees the old file or the new one, and two writers of the same content agree)."""
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(target), suffix=".tmp")
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(tmp, target)


def _seal(payload):
    return _MAGIC + hashlib.sha256(payload).digest() + payload


def _unseal(blob, path):
    """The payload of a sealed file, or None (with a warning) when it does not verify."""
    head = len(_MAGIC) + 32
    if blob[:len(_MAGIC)] == _MAGIC and len(blob) >= head and \
            hashlib.sha256(blob[head:]).digest() == blob[len(_MAGIC):head]:
        return blob[head:]
    warnings.warn(f"weft: ignoring the damaged compiled-code cache file {path!r}; the function "
                  "is recompiled", CacheWarning, stacklevel=2)
    return None


def read_sealed(path):
    """The payload of the sealed file at ``path``: None when there is none, or (with a
    warning) when it does not verify."""
    try:
        with open(path, "rb") as f:
            blob = f.read()
    except OSError:
        return None
    return _unseal(blob, path)


def write_sealed(path, payload):
    """Write ``payload`` (bytes) sealed to ``path``, atomically (its folder made first,
    private)."""
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    write_replacing(path, _seal(payload))


class _VerifiedFile(caching.IndexDataCacheFile):
    """Numba's index and data files, sealed with a SHA-256 of their contents.

    Saving is made safe between processes (test workers, the background compile helper,
    ``load_module``'s workers share one cache): Numba reads the index, picks the first free data
    file number and writes the index back, so two processes saving two signatures of one
    function at once lose one entry or, worse, write both to the same data file. Here the
    index is read, updated and written under an exclusive lock on a file beside it, and a data
    file is named by a hash of its key."""

    def save(self, key, data):
        with _locked(self._index_path + ".lock"):
            overloads = self._load_index()
            name = overloads.get(key)
            if name is None:
                digest = hashlib.sha256(repr(key).encode()).hexdigest()[:16]
                name = f"{self._index_name[:-len('.nbi')]}.{digest}.nbc"
            self._save_data(name, data)
            if overloads.get(key) != name:
                overloads[key] = name
                self._save_index(overloads)

    def _load_index(self):
        import pickle
        payload = read_sealed(self._index_path)
        if payload is None:
            return {}
        try:
            version, stamp, overloads = pickle.loads(payload)
        except Exception:  # noqa: BLE001 - a sealed file of an unknown layout: start afresh
            return {}
        if version != self._version or stamp != self._source_stamp:
            return {}
        return overloads

    def _save_index(self, overloads):
        import pickle
        payload = pickle.dumps((self._version, self._source_stamp, overloads), protocol=-1)
        with self._open_for_write(self._index_path) as f:
            f.write(_seal(payload))

    def _load_data(self, name):
        import pickle
        path = self._data_path(name)
        with open(path, "rb") as f:
            blob = f.read()
        payload = _unseal(blob, path)
        if payload is None:
            raise OSError(f"damaged cache file {path}")  # Numba then recompiles
        return pickle.loads(payload)

    def _save_data(self, name, data):
        with self._open_for_write(self._data_path(name)) as f:
            f.write(_seal(self._dump(data)))


class _Locator(caching._SourceFileBackedLocatorMixin, caching._CacheLocator):
    """Numba files of any function weft compiles live under ``<cache root>/numba``."""

    def __init__(self, py_func, py_file):
        self._py_file = py_file
        self._lineno = py_func.__code__.co_firstlineno
        self._cache_path = os.path.join(cache_root(), "numba",
                                        self.get_suitable_cache_subpath(py_file))

    def get_cache_path(self):
        return self._cache_path

    @classmethod
    def from_function(cls, py_func, py_file):
        if cache_root() is None or not os.path.exists(py_file):
            return None
        self = cls(py_func, py_file)
        if writable():
            try:
                self.ensure_cache_path()
            except OSError:
                pass  # read what is there; saving is skipped (see _Impl)
        return self


class _Impl(caching.CompileResultCacheImpl):
    _locator_classes = [_Locator]


# ---------------------------------------------------------------------- shipped machine code

_shipped = []  # [(source folder + os.sep, store)]: see register_shipped


def register_shipped(folder, store):
    """Machine code shipped with weft for the functions defined under ``folder``: ``store``
    has ``load(key) -> bytes or None`` (the pickled payload Numba's cache would have written)
    and ``collecting()`` (True while a build collects new entries instead). A function's
    key is :func:`shipped_key`. Consulted after weft's cache misses, so nothing of weft's own
    is compiled on a new machine (``weft.native.shipped``)."""
    _shipped.append((os.path.abspath(folder) + os.sep, store))


def _shipped_for(py_func):
    """``(store, path relative to its folder)`` for a function defined under a registered
    folder, else ``(None, None)``."""
    path = os.path.abspath(py_func.__code__.co_filename)
    for folder, store in _shipped:
        if path.startswith(folder):
            return store, os.path.relpath(path, folder).replace(os.sep, "/")
    return None, None


def shipped_key(relpath, py_func, options, sig):
    """The key of one compiled signature in a store of shipped machine code: where the
    function is defined, its name, a hash of its bytecode, constants and closure (the store
    as a whole is also tied to the hash of its sources), its compile options and argument
    types."""
    code = py_func.__code__
    h = hashlib.sha256(code.co_code)
    h.update(repr((code.co_consts, code.co_names)).encode())
    if py_func.__closure__:
        h.update(repr([c.cell_contents for c in py_func.__closure__]).encode())
    opts = ",".join(f"{k}={options[k]!r}" for k in sorted(options))
    return f"{relpath}:{py_func.__qualname__}:{h.hexdigest()[:24]}:{opts}:{sig!r}"


class _Shipped:
    """The shipped-code half of a function's cache (shared by both cache classes below)."""

    def _init_shipped(self, py_func, options):
        self._shipped_store, rel = _shipped_for(py_func)
        self._shipped_args = (rel, py_func, dict(options or {}))

    def _load_shipped(self, sig, target_context):
        store = self._shipped_store
        if store is None or store.collecting():
            return None
        payload = store.load(shipped_key(*self._shipped_args, sig))
        if payload is None:
            return None
        import pickle
        _runtime_symbols(target_context)
        return caching.CompileResultCacheImpl.rebuild(None, target_context,
                                                      pickle.loads(payload))

    def _collect_shipped(self, sig, cres):
        """While a build collects (``store.collecting()``), hand it every compiled signature."""
        store = self._shipped_store
        if store is None or not store.collecting() or cres.library.has_dynamic_globals or \
                any(not x.can_cache for x in cres.lifted):
            return
        import pickle
        payload = pickle.dumps(caching.CompileResultCacheImpl.reduce(None, cres), protocol=-1)
        store.collect(shipped_key(*self._shipped_args, sig), payload)


class VerifiedCache(_Shipped, caching.FunctionCache):
    """Numba's per-function cache, kept under weft's cache root and verified on load; then
    the machine code shipped with weft, for weft's own functions."""

    _impl_class = _Impl

    def __init__(self, py_func, options=None):
        super().__init__(py_func)
        f = self._cache_file
        self._cache_file = _VerifiedFile(f._cache_path, f._index_name[:-len(".nbi")],
                                         f._source_stamp)
        self._init_shipped(py_func, options)

    def load_overload(self, sig, target_context):
        """Numba's ``load_overload`` without its ``target_context.refresh()``: loading machine
        code needs none of Numba's typing and lowering registries, whose first loading is
        about half of a warm start (importing every implementation module of Numba's NumPy
        support); a compile loads them itself (``CompilerBase`` refreshes both contexts)."""
        _runtime_symbols(target_context)
        with self._guard_against_spurious_io_errors():
            data = self._load_overload(sig, target_context)
        return data if data is not None else self._load_shipped(sig, target_context)

    def save_overload(self, sig, data):
        self._collect_shipped(sig, data)
        if not writable():
            return
        try:
            super().save_overload(sig, data)
        except OSError as exc:  # a full disk or a cache made read-only meanwhile
            warnings.warn(f"weft: could not cache compiled code ({exc})", CacheWarning)


class _ShippedOnly(_Shipped, caching.NullCache):
    """No usable cache directory: only the shipped machine code."""

    def __init__(self, py_func, options=None):
        self._init_shipped(py_func, options)

    def load_overload(self, sig, target_context):
        return self._load_shipped(sig, target_context)

    def save_overload(self, sig, data):
        self._collect_shipped(sig, data)


_runtime_ready = []


def _runtime_symbols(target_context):
    """What loaded machine code links against that Numba registers only while loading its
    registries: the NRT's functions (allocation, reference counts) and the hash secret
    (``_numba_hashsecret_*``). Missing, LLVM aborts the process ("Symbol not found"). The
    NRT's own LLVM functions (atomic reference counts, ``NRT_MemInfo_data_fast``) come from
    this cache (:func:`_nrt_library`) rather than compiled by Numba in every process."""
    if not _runtime_ready:
        from numba.core.runtime import nrtdynmod, rtsys
        from numba.cpython import hashing  # noqa: F401 (injects the hash secret)
        with _nrt_lock:
            if not rtsys._init:
                compile_nrt = nrtdynmod.compile_nrt_functions
                nrtdynmod.compile_nrt_functions = _nrt_library
                try:
                    rtsys.initialize(target_context)
                finally:
                    nrtdynmod.compile_nrt_functions = compile_nrt
        _runtime_ready.append(True)


_nrt_lock = __import__("threading").Lock()


def _nrt_library(ctx):
    """Numba's ``compile_nrt_functions``: the NRT's LLVM functions as a code library, loaded
    from a sealed file of this cache when one was written by the same Numba, llvmlite and
    CPU (``codegen.magic_tuple``), else compiled and written there. Compiling them (their
    module through LLVM's full pipeline) was 19-28 ms of every process that loads cached
    code, about as long as loading a geometry program's kernels (``docs/performance.md``,
    stop 74)."""
    import pickle

    import llvmlite
    from numba.core.runtime import nrtdynmod
    codegen = ctx.codegen()
    root = cache_root()
    path = None
    if root is not None:
        key = hashlib.sha256(repr((numba.__version__, llvmlite.__version__,
                                   codegen.magic_tuple())).encode()).hexdigest()[:24]
        path = os.path.join(root, f"nrt-{key}.bin")
        payload = read_sealed(path)
        if payload is not None:
            try:
                return codegen.unserialize_library(pickle.loads(payload))
            except Exception:  # noqa: BLE001 - unreadable: compiled below, as by Numba
                pass
    ir_mod, library = nrtdynmod.create_nrt_module(ctx)
    library.enable_object_caching()
    library.add_ir_module(ir_mod)
    library.finalize()
    if path is not None and writable():
        try:
            payload = pickle.dumps(library.serialize_using_object_code(), protocol=-1)
            write_sealed(path, payload)
        except (OSError, RuntimeError, ValueError):
            pass  # (not cached: compiled again next time)
    return library


def _use_verified_cache(disp):
    """Give dispatcher ``disp`` the verified cache (or none when nothing can be cached), made
    at its first use (:class:`_CacheOnUse`)."""
    if not isinstance(disp, dispatcher.Dispatcher):
        return disp  # NUMBA_DISABLE_JIT=1: a plain Python function
    disp._cache = _CacheOnUse(disp)
    return disp


def _cache_of(disp):
    options = disp.targetoptions
    try:
        return VerifiedCache(disp.py_func, options) if cache_root() is not None else \
            _ShippedOnly(disp.py_func, options)
    except RuntimeError:  # no locator: the function has no source file
        return _ShippedOnly(disp.py_func, options)


class _CacheOnUse:
    """A dispatcher's cache, made (and put in its place) at the dispatcher's first compile or
    load. Making one (Numba's locator, a write test of its directory, the shipped key) costs
    about 0.1 ms, and most of weft's several hundred functions are never called by a given
    program (``docs/performance.md``, stop 74)."""

    __slots__ = ("_disp",)

    def __init__(self, disp):
        self._disp = disp

    def __getattr__(self, name):
        cache = _cache_of(self._disp)
        self._disp._cache = cache
        return getattr(cache, name)


def njit(*args, **options):
    """``numba.njit(cache=True, ...)`` whose machine code goes to weft's verified cache (or
    nowhere, when there is no usable cache directory)::

        @njit(nogil=True)
        def launch_size(dim): ...
    """
    options.pop("cache", None)

    def wrap(fn):
        return _use_verified_cache(numba.njit(**options)(fn))

    if args and callable(args[0]) and not options:
        return wrap(args[0])
    return wrap


def protect(module):
    """Give every CPU dispatcher of a loaded generated ``module`` the verified cache (before
    anything was compiled or loaded)."""
    for value in vars(module).values():
        if isinstance(value, types.ModuleType):
            continue  # (``_wk``'s __getattr__ would import the geometry queries: 4 ms)
        value = getattr(value, "weft_chunk_of", value)  # a chunk function's dispatcher
        if isinstance(value, dispatcher.Dispatcher):
            _use_verified_cache(value)
    return module
