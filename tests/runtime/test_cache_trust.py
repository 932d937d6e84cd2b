"""The cache directory is a trust boundary (weft imports code from it): directories others can
write, symbolic links and foreign owners are refused; damaged or edited entries, weft's modules
and Numba's files alike, are rebuilt; a read-only cache and no cache at all still run.

Each case runs a small program in new processes against its own cache directory (the code
objects saved beside the modules included)."""
import os
import stat
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.uncached  # each case brings its own cache

PROGRAM = textwrap.dedent("""
    import warnings
    warnings.simplefilter("always")
    import numpy as np
    import weft as wp
    from weft.runtime.cache import STATS

    @wp.kernel
    def k(x: wp.array(dtype=float), y: wp.array(dtype=float)):
        i = wp.tid()
        y[i] = wp.sin(x[i]) * 2.0

    x = wp.array(np.linspace(0.0, 1.0, 8, dtype=np.float32), requires_grad=True)
    y = wp.zeros(8, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(k, 8, inputs=[x], outputs=[y])
    tape.backward(grads={y: np.ones(8, np.float32)})
    print("y", y.numpy().round(6).tolist())
    print("g", x.grad.numpy().round(6).tolist())
    print("transpiled", len(STATS["transpiled"]), "compiled", len(STATS["compiled"]))
    import sys
    print("passes", "weft.runtime.numba_passes" in sys.modules)  # (imported to compile only)
""")
EXPECTED_Y = [round(2 * float(__import__("numpy").sin(v)), 6)
              for v in __import__("numpy").linspace(0.0, 1.0, 8, dtype="float32")]


def script(folder, text=PROGRAM):
    """The program as a file (weft reads kernels' source from their file)."""
    path = folder / f"prog_{abs(hash(text)) % 10**8}.py"
    if not path.exists():
        path.write_text(text)
    return str(path)


def clean_env(extra):
    env = {k: v for k, v in os.environ.items() if k not in ("WEFT_CACHE_DIR", "WEFT_EXPECT_WARM")}
    env.update(extra)
    return env


def run(folder, env_extra, prelude=""):
    """Run the program (written into ``folder``) in a new process; check its values."""
    r = subprocess.run([sys.executable, script(folder, prelude + PROGRAM)],
                       capture_output=True, text=True, env=clean_env(env_extra), timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    lines = dict(line.split(" ", 1) for line in r.stdout.splitlines())
    assert [round(v, 5) for v in eval(lines["y"])] == [round(v, 5) for v in EXPECTED_Y]
    return lines, r.stderr


def counts(lines):
    parts = lines["transpiled"].split()
    return int(parts[0]), int(parts[2])


def test_second_process_is_warm_and_agrees(tmp_path):
    first, _ = run(tmp_path, {"WEFT_CACHE_DIR": str(tmp_path / "c")})
    second, err = run(tmp_path, {"WEFT_CACHE_DIR": str(tmp_path / "c")})
    assert counts(first)[0] > 0 and counts(second) == (0, 0)
    assert first == {**second, "transpiled": first["transpiled"], "passes": first["passes"]}
    assert first["passes"] == "True" and second["passes"] == "False"
    assert "Warning" not in err
    assert stat.S_IMODE(os.stat(tmp_path / "c").st_mode) == 0o700


@pytest.mark.parametrize("kind", ["world-writable", "symlink", "group-writable"])
def test_untrusted_directories_are_refused(tmp_path, kind):
    target = tmp_path / "shared"
    target.mkdir()
    if kind == "world-writable":
        target.chmod(0o777)
        path = target
    elif kind == "group-writable":
        target.chmod(0o770)
        path = target
    else:
        target.chmod(0o700)
        path = tmp_path / "link"
        path.symlink_to(target)
    home = tmp_path / "home"
    lines, err = run(tmp_path, {"WEFT_CACHE_DIR": str(path), "HOME": str(home),
                      "XDG_CACHE_HOME": str(home / ".cache")})
    why = {"symlink": "is a symbolic link"}.get(kind, "writable by group or others")
    assert "not using the cache directory" in err and why in err, err
    assert not any(p.suffix == ".py" for p in target.iterdir())  # nothing written there
    assert any((home / ".cache" / "weft").glob("k_*.py"))        # the private fallback


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                    reason="needs root to make a directory owned by another user")
def test_directory_of_another_user_is_refused(tmp_path):
    target = tmp_path / "theirs"
    target.mkdir(mode=0o700)
    os.chown(target, 65534, 65534)
    home = tmp_path / "home"
    _, err = run(tmp_path, {"WEFT_CACHE_DIR": str(target), "HOME": str(home),
                  "XDG_CACHE_HOME": str(home / ".cache")})
    assert "owned by another user" in err


def _entries(cache, suffix):
    return sorted(p for p in cache.rglob("*" + suffix))


@pytest.mark.parametrize("damage", ["truncate", "garble", "edit"])
def test_damaged_or_edited_module_is_rebuilt(tmp_path, damage):
    cache = tmp_path / "c"
    run(tmp_path, {"WEFT_CACHE_DIR": str(cache)})
    for mod in _entries(cache, ".py"):
        text = mod.read_text()
        if damage == "truncate":
            mod.write_text(text[:len(text) // 2])
        elif damage == "garble":
            mod.write_bytes(bytes(b ^ 0x5A for b in text.encode()[:200]) + text.encode()[200:])
        else:  # a hand edit that is valid Python and would change the results
            mod.write_text(text.replace("* float32(2.0)", "* float32(3.0)"))
    lines, err = run(tmp_path, {"WEFT_CACHE_DIR": str(cache)})
    assert "rebuilding it" in err
    assert counts(lines)[0] > 0
    third, err3 = run(tmp_path, {"WEFT_CACHE_DIR": str(cache)})
    assert counts(third) == (0, 0) and "rebuilding" not in err3


@pytest.mark.parametrize("which", [".nbi", ".nbc"])
def test_damaged_numba_files_are_recompiled(tmp_path, which):
    cache = tmp_path / "c"
    run(tmp_path, {"WEFT_CACHE_DIR": str(cache)})
    files = _entries(cache, which)
    assert files
    for k, f in enumerate(files):
        blob = f.read_bytes()
        f.write_bytes(blob[:len(blob) // 3] if k % 2 else
                      blob[:40] + bytes(b ^ 0xFF for b in blob[40:80]) + blob[80:])
    lines, err = run(tmp_path, {"WEFT_CACHE_DIR": str(cache)})
    assert "damaged compiled-code cache file" in err
    assert counts(lines)[1] > 0  # recompiled, not loaded
    again, _ = run(tmp_path, {"WEFT_CACHE_DIR": str(cache)})
    assert counts(again) == (0, 0)


def test_two_processes_compiling_the_same_new_kernel_both_succeed(tmp_path):
    env = clean_env({"WEFT_CACHE_DIR": str(tmp_path / "c")})
    prog = script(tmp_path)
    procs = [subprocess.Popen([sys.executable, prog], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env) for _ in range(2)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1][-2000:] for o in outs]
    ys = [[line for line in o[0].splitlines() if line.startswith(("y ", "g "))] for o in outs]
    assert ys[0] == ys[1] and len(ys[0]) == 2
    lines, _ = run(tmp_path, {"WEFT_CACHE_DIR": str(tmp_path / "c")})
    assert counts(lines) == (0, 0)


def test_read_only_cache_still_runs(tmp_path):
    cache = tmp_path / "c"
    run(tmp_path, {"WEFT_CACHE_DIR": str(cache)})
    before = sorted(str(p) for p in cache.rglob("*"))
    lines, err = run(tmp_path, {"WEFT_CACHE_DIR": str(cache), "WEFT_CACHE_READONLY": "1"})
    assert counts(lines) == (0, 0) and "Warning" not in err  # what is there is used
    # a kernel the cache does not hold compiles in memory and writes nothing
    other = script(tmp_path, PROGRAM.replace("* 2.0", "* 2.0 + 0.0"))
    env = clean_env({"WEFT_CACHE_DIR": str(cache), "WEFT_CACHE_READONLY": "1"})
    r = subprocess.run([sys.executable, other], capture_output=True, text=True, env=env,
                       timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert sorted(str(p) for p in cache.rglob("*")) == before


def test_no_usable_directory_compiles_in_memory(tmp_path):
    # the default directory cannot be created (its parent is a file) and neither can a
    # temporary one: every kernel compiles in memory, with one warning
    blocker = tmp_path / "file"
    blocker.write_text("")
    prelude = f"import tempfile; tempfile.tempdir = {str(blocker / 'tmp')!r}\n"
    lines, err = run(tmp_path, {"HOME": str(blocker / "home"),
                                "XDG_CACHE_HOME": str(blocker / "xdg"), "WEFT_CACHE_DIR": ""},
                     prelude)
    assert err.count("compiling in memory") == 1, err
    assert counts(lines)[0] > 0


def test_weft_helpers_cache_under_the_cache_root():
    from weft.core import diskcache
    from weft.native import helpers
    path = helpers.trip_count._cache.cache_path  # (the cache is made at its first use)
    assert isinstance(helpers.trip_count._cache, diskcache.VerifiedCache)
    assert path.startswith(os.path.join(diskcache.cache_root(), "numba"))


def test_a_helpers_cache_is_made_at_its_first_use(tmp_path):
    """weft's several hundred helpers get their caches when first compiled or loaded."""
    program = textwrap.dedent("""
        import numpy as np
        from weft.core import diskcache
        from weft.native import helpers
        before = type(helpers.grow._cache).__name__
        out = helpers.grow(np.arange(3.0))
        print(before, type(helpers.grow._cache).__name__, out[:3].tolist(), out.shape[0])
    """)
    path = tmp_path / "grow.py"
    path.write_text(program)
    for _ in range(2):  # compiled, then loaded from the cache
        r = subprocess.run([sys.executable, str(path)], capture_output=True, text=True,
                           env=clean_env({"WEFT_CACHE_DIR": str(tmp_path / "c")}), timeout=300)
        assert r.returncode == 0, r.stderr[-3000:]
        assert r.stdout.split() == ["_CacheOnUse", "VerifiedCache", "[0.0,", "1.0,", "2.0]",
                                    "6"]


SIGNATURES = r"""
import sys
import numpy as np
from weft.core.diskcache import njit

@njit(error_model="numpy")
def bump(x):
    return x + x.dtype.type(1)

kinds = sys.argv[1].split(",")
for k in kinds:
    bump(np.zeros(3, k))
print("misses", len(bump.stats.cache_misses), "hits", len(bump.stats.cache_hits))
"""


def test_processes_saving_signatures_of_one_function_at_once_keep_them_all(tmp_path):
    # each process compiles other signatures of one cached function at the same moment; their
    # index updates are serialised, so a later process loads every one of them
    src = tmp_path / "sigs.py"
    src.write_text(SIGNATURES)
    env = clean_env({"WEFT_CACHE_DIR": str(tmp_path / "c")})
    groups = ["int32,float32", "int64,float64", "uint32,int16", "uint64,int8"]
    procs = [subprocess.Popen([sys.executable, str(src), g], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env) for g in groups]
    outs = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1][-2000:] for o in outs]
    r = subprocess.run([sys.executable, str(src), ",".join(groups)], capture_output=True,
                       text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.split()[-4:] == ["misses", "0", "hits", "8"], r.stdout


# counts the generated modules whose text this process compiles (rather than loading the code
# object saved beside them); printed at exit (weft's quick exit is off for it)
_COUNT_TEXT_COMPILES = textwrap.dedent("""
    import atexit, builtins, os
    _real_compile, _texts = builtins.compile, []
    def _spy(source, filename, *a, **k):
        if str(filename).startswith(os.environ["WEFT_CACHE_DIR"]):
            _texts.append(filename)
        return _real_compile(source, filename, *a, **k)
    builtins.compile = _spy
    def _report():
        print("texts", len(_texts), flush=True)
        print("textnames", [os.path.basename(t) for t in _texts], flush=True)
    atexit.register(_report)
""")


@pytest.mark.parametrize("damage", ["truncate", "garble", "other text"])
def test_code_objects_load_beside_modules_and_damaged_ones_are_compiled_again(tmp_path, damage):
    cache = tmp_path / "c"
    env = {"WEFT_CACHE_DIR": str(cache), "WEFT_QUICK_EXIT": "0"}
    first, _ = run(tmp_path, env, _COUNT_TEXT_COMPILES)
    codes = _entries(cache, ".py.code")
    assert codes and int(first["texts"]) == len(codes)  # each module's text compiled once
    good = {c: c.read_bytes() for c in codes}
    second, _ = run(tmp_path, env, _COUNT_TEXT_COMPILES)
    # loaded, nothing compiled (the names: which module's code object was not used)
    assert int(second["texts"]) == 0 and counts(second) == (0, 0), \
        (second["textnames"], second["transpiled"], sorted(p.name for p in cache.iterdir()))
    for c, blob in good.items():
        if damage == "truncate":
            c.write_bytes(blob[:len(blob) // 2])
        elif damage == "garble":
            c.write_bytes(blob[:60] + bytes(b ^ 0x5A for b in blob[60:120]) + blob[120:])
        else:  # the header of another module's text: never executed for this one
            c.write_bytes(blob[:4] + bytes(32) + blob[36:])
    third, err = run(tmp_path, env, _COUNT_TEXT_COMPILES)
    assert int(third["texts"]) == len(codes) and counts(third) == (0, 0)
    assert "Traceback" not in err
    assert {c: c.read_bytes() for c in codes} == good  # written again, as they were


NRT_CHECK = textwrap.dedent("""
    import numba
    from numba.core.runtime import nrtdynmod

    @numba.njit  # compiled here: links the NRT's functions, allocates, counts references
    def ramp(n):
        a = np.empty(n)
        for i in range(n):
            a[i] = i * 0.5
        b = a
        return b[1:].copy()

    print("ramp", ramp(5).tolist())
""")
NO_NRT_COMPILE = textwrap.dedent("""
    from numba.core.runtime import nrtdynmod as _nrtdynmod

    def _refuse(*args):
        raise AssertionError("the NRT's functions were compiled, not loaded")
    _nrtdynmod.create_nrt_module = _refuse
""")


def test_nrt_functions_load_from_the_cache(tmp_path):
    """The NRT's LLVM functions (reference counts, allocation) are compiled once per cache
    (``diskcache._nrt_library``) and loaded, sealed, by later processes; a damaged file is
    compiled again."""
    cache = tmp_path / "c"

    def go(prelude=""):
        path = tmp_path / f"nrt_{abs(hash(prelude)) % 10**8}.py"
        path.write_text(prelude + PROGRAM + NRT_CHECK)
        r = subprocess.run([sys.executable, str(path)], capture_output=True, text=True,
                           env=clean_env({"WEFT_CACHE_DIR": str(cache)}), timeout=300)
        assert r.returncode == 0, r.stderr[-3000:]
        lines = dict(line.split(" ", 1) for line in r.stdout.splitlines())
        assert eval(lines["ramp"]) == [0.5, 1.0, 1.5, 2.0]
        assert [round(v, 5) for v in eval(lines["y"])] == [round(v, 5) for v in EXPECTED_Y]
        return lines, r.stderr

    first, _ = go()
    (nrt,) = cache.glob("nrt-*.bin")
    second, err = go(NO_NRT_COMPILE)  # loaded: compiling would fail
    assert second["g"] == first["g"] and "damaged" not in err  # (its kernel compiled here too)
    nrt.write_bytes(nrt.read_bytes()[:200])
    third, err = go()
    assert "damaged compiled-code cache file" in err and third["g"] == first["g"]
    go(NO_NRT_COMPILE)  # written again


ENVIRONMENTS = textwrap.dedent("""
    import sys
    import numpy as np
    import weft
    from weft.core.diskcache import njit

    @njit(error_model="numpy")
    def ramp(n):
        if n < 0:
            raise ValueError("negative length", n)
        a = np.empty(n)  # (Numba's allocation: an environment of numba.np.arrayobj)
        for i in range(n):
            a[i] = i * 0.25
        return a

    out = ramp(4).tolist()
    try:
        ramp(-2)
        raised = None
    except ValueError as exc:
        raised = exc.args
    print(out, raised, "numba.np.arrayobj" in sys.modules, len(ramp.stats.cache_hits))
    import numba
    lib = ramp.overloads[ramp.signatures[0]].library

    @numba.njit  # compiled here, linking ramp's library: its bitcode parsed now if loaded
    def total(n):
        return ramp(n).sum()

    unparsed = "_weft_bitcode" in vars(lib)
    print(total(4), unparsed, "_weft_bitcode" in vars(lib))
""")


def test_cached_code_loads_without_importing_its_callees_modules(tmp_path):
    """A cached function's referenced environments are rebuilt without importing their
    modules (``numba_start.environments_without_imports``): loading it imports none of
    Numba's implementation modules, and its values and exceptions are those compiled. Its
    bitcode is parsed when a new compile links it (``linking_modules_on_use``)."""
    path = tmp_path / "ramp.py"
    path.write_text(ENVIRONMENTS)
    outs = []
    for _ in range(2):  # compiled, then loaded
        r = subprocess.run([sys.executable, str(path)], capture_output=True, text=True,
                           env=clean_env({"WEFT_CACHE_DIR": str(tmp_path / "c")}), timeout=300)
        assert r.returncode == 0, r.stderr[-3000:]
        outs.append(r.stdout.strip().splitlines()[-2:])
    assert outs[0] == ["[0.0, 0.25, 0.5, 0.75] ('negative length', -2) True 0", "1.5 False False"]
    # loaded: the bitcode callers link is parsed at the first link (linking_modules_on_use)
    assert outs[1] == ["[0.0, 0.25, 0.5, 0.75] ('negative length', -2) False 1", "1.5 True False"]
    # the rebuild is pickled by reference as Numba's own: the files load without weft too
    files = list((tmp_path / "c").rglob("*.nbc"))
    assert files and all(b"numba_start" not in f.read_bytes() for f in files)


def test_object_code_symbols_are_the_bitcodes_definitions():
    """``elf_defined_symbols`` gives the names Numba takes from the bitcode it ships beside a
    function's object code (functions, constants, environments, exception data)."""
    import llvmlite.binding as ll
    import numba
    import numpy as np

    from weft.runtime.numba_start import elf_defined_symbols

    @numba.njit
    def pick(a, i):
        if i >= a.shape[0]:
            raise IndexError("past the end", i)
        return np.sin(a[i]) + a.sum()

    pick(np.ones(3), 1)
    name, kind, (obj, bitcode) = pick.overloads[pick.signatures[0]].library \
        .serialize_using_object_code()
    mod = ll.parse_bitcode(bitcode)
    numbas = {g.name for gs in (mod.functions, mod.global_variables) for g in gs
              if not g.is_declaration}
    assert kind == "object" and len(numbas) > 3 and elf_defined_symbols(obj) == numbas
    assert elf_defined_symbols(b"\xcf\xfa\xed\xfe" + obj[4:]) is None  # (another format)
