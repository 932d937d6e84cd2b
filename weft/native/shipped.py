"""Machine code of weft's own functions, shipped with weft, so that a new machine, container,
CI job or virtual environment never compiles them on a program's critical path.

Everything in this layer that Numba compiles (the BVH builders and refits, the mesh, volume and
hash-grid queries kernels call, the ``_wk`` helpers) goes through weft's verified cache
(:func:`weft.core.diskcache.njit`). When that cache has no entry for a signature, the
cache looks here before compiling: ``machine_code/<tag>.index`` and ``<tag>.bin`` hold, for
each signature a build saw compiled, exactly the payload Numba's cache would have written
(object code, the bitcode callers link, the function descriptor), compressed.

The code is compiled for a portable CPU baseline (``x86-64-v3``: AVX2 and FMA, every x86 CPU
since 2013-2015), so one build serves every such machine. A store is used only when all of
these hold, and is otherwise ignored (weft then compiles as before; nothing changes but time):

- the same Numba, llvmlite and Python versions as the build's, the same target triple;
- the host CPU has every feature the baseline needs;
- the sources of this layer (``weft/native/**.py``, but for the CUDA device functions) and of
  ``weft/core/diskcache.py`` hash to
  the build's fingerprint (``tests/test_shipped.py`` fails while the store is stale).

Rebuild after changing this layer, from a checkout (13-30 minutes on 2 cores: the geometry
tests, then ``tools/native_workload.py``, with every compile collected)::

    python -m weft.native build

Why this mechanism (see ``docs/performance.md``): Numba's cache format is what weft already
loads for every warm start, so shipped code loads exactly like a warm cache, with no C
compiler or linker at install time and no second calling convention; pip's isolated builds
cannot compile into the target environment, and compiling at first import would still be on
the critical path of a short program.
"""
from __future__ import annotations

import hashlib
import os
import pickle
import subprocess
import sys
import tempfile
import threading
import zlib

from ..core import diskcache

HERE = os.path.dirname(os.path.abspath(__file__))
FOLDER = os.path.join(HERE, "machine_code")
BASELINE = "x86-64-v3"
#: what an x86-64-v3 build may execute (LLVM's feature names)
BASELINE_FEATURES = {
    "x86-64-v3": ("avx", "avx2", "bmi", "bmi2", "f16c", "fma", "lzcnt", "movbe", "popcnt",
                  "sse3", "ssse3", "sse4.1", "sse4.2", "cx16", "sahf", "xsave"),
}
COLLECT_ENV = "WEFT_SHIPPED_COLLECT"


#: this module and its command line: what ships the code, not what is compiled; and the CUDA
#: device functions (``cuda_helpers``, ``cuda_tiles``, ``cuda_tile_elements``,
#: ``cuda_tile_algebra``, ``cuda_tile_order``, ``cuda_views``), which numba-cuda compiles on the
#: GPU's machine and the store (CPU machine code) never holds
MECHANISM = {(HERE, "shipped.py"), (HERE, "__main__.py"), (HERE, "cuda_helpers.py"),
             (HERE, "cuda_tiles.py"), (HERE, "cuda_tile_algebra.py"),
             (HERE, "cuda_tile_order.py"), (HERE, "cuda_views.py"),
             (HERE, "cuda_tile_elements.py")}


def fingerprint():
    """A hash of every source the shipped code was compiled from."""
    h = hashlib.sha256()
    files = [os.path.join(HERE, "..", "core", "diskcache.py")]
    for root, dirs, names in os.walk(HERE):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        files.extend(os.path.join(root, n) for n in sorted(names)
                     if n.endswith(".py") and (root, n) not in MECHANISM)
    for path in files:
        rel = os.path.relpath(path, os.path.dirname(HERE)).replace(os.sep, "/")
        with open(path, "rb") as f:
            h.update(rel.encode() + b"\0" + f.read() + b"\0")
    return h.hexdigest()


def host_facts():
    """What a store must match: versions, target triple and the host CPU's features."""
    import llvmlite
    import llvmlite.binding as ll
    import numba
    features = ll.get_host_cpu_features()
    return {"numba": numba.__version__, "llvmlite": llvmlite.__version__,
            "python": "%d.%d" % sys.version_info[:2], "triple": ll.get_process_triple(),
            "features": {k for k, v in features.items() if v}}


def why_unusable(meta, facts=None, source=None):
    """None when a store with ``meta`` may be loaded on this host, else the reason."""
    facts = facts or host_facts()
    for k in ("numba", "llvmlite", "python", "triple"):
        if meta.get(k) != facts[k]:
            return f"built for {k} {meta.get(k)}, this is {facts[k]}"
    missing = set(BASELINE_FEATURES.get(meta.get("cpu"), ("unknown cpu",))) - facts["features"]
    if missing:
        return f"this CPU lacks {', '.join(sorted(missing))} ({meta.get('cpu')})"
    if meta.get("fingerprint") != (source or fingerprint()):
        return "weft/native changed since it was built (python -m weft.native build)"
    return None


def _tag(cpu):
    import llvmlite.binding as ll
    return f"{ll.get_process_triple()}-{cpu}"


class Store:
    """The shipped machine code (see the module docstring); :func:`weft.core.diskcache.
    register_shipped` asks it for payloads by key."""

    def __init__(self, folder=FOLDER):
        self.folder = folder
        self._lock = threading.Lock()
        self._entries = None  # key -> (offset, length, sha256) once opened ({} when unusable)
        self._blob = None
        self.reason = None    # why no store is used, once opened
        self._collect = os.environ.get(COLLECT_ENV) or None

    def collecting(self):
        return self._collect is not None

    def collect(self, key, payload):
        """Write one compiled signature into the collection folder (a build in progress)."""
        name = hashlib.sha256(key.encode()).hexdigest()[:32] + ".entry"
        fd, tmp = tempfile.mkstemp(dir=self._collect)
        with os.fdopen(fd, "wb") as f:
            pickle.dump((key, payload), f, protocol=-1)
        os.replace(tmp, os.path.join(self._collect, name))

    def _open(self):
        with self._lock:
            if self._entries is not None:
                return
            self._entries, self.reason = {}, "no store was built for this platform"
            try:
                names = sorted(n for n in os.listdir(self.folder) if n.endswith(".index"))
            except OSError:
                return
            facts, source = None, None
            for name in names:
                path = os.path.join(self.folder, name)
                try:
                    with open(path, "rb") as f:
                        payload = diskcache._unseal(f.read(), path)  # (sealed like the cache)
                    if payload is None:
                        self.reason = f"{name} is damaged"
                        continue
                    meta, entries = pickle.loads(payload)
                except Exception as exc:  # noqa: BLE001 - an unreadable store is not used
                    self.reason = f"{name} cannot be read ({exc})"
                    continue
                facts = facts or host_facts()
                source = source or fingerprint()
                why = why_unusable(meta, facts, source)
                if why is not None:
                    self.reason = why
                    continue
                self._entries, self.reason = entries, None
                self._blob = os.path.join(self.folder, name[:-len(".index")] + ".bin")
                return

    def load(self, key):
        """The payload of ``key``, or None."""
        if self._entries is None:
            self._open()
        hit = self._entries.get(key)
        if hit is None:
            return None
        offset, length, digest = hit
        try:
            with open(self._blob, "rb") as f:
                f.seek(offset)
                data = zlib.decompress(f.read(length))
        except (OSError, zlib.error):
            return None
        return data if hashlib.sha256(data).digest() == digest else None

    def __len__(self):
        if self._entries is None:
            self._open()
        return len(self._entries)


STORE = Store()
diskcache.register_shipped(HERE, STORE)


# ------------------------------------------------------------------------------------ build

def write_store(entries, cpu, folder=FOLDER):
    """Write ``{key: payload}`` as the store for ``cpu`` on this platform (replacing any other
    store of this platform); returns the index path."""
    os.makedirs(folder, exist_ok=True)
    tag = _tag(cpu)
    triple = tag[:-len(cpu) - 1]
    for name in os.listdir(folder):
        if name.startswith(triple + "-") and name.endswith((".index", ".bin")):
            os.remove(os.path.join(folder, name))
    meta = dict(host_facts(), cpu=cpu, fingerprint=fingerprint())
    del meta["features"]
    index, offset = {}, 0
    with open(os.path.join(folder, tag + ".bin"), "wb") as f:
        for key in sorted(entries):
            data = entries[key]
            packed = zlib.compress(data, 9)
            f.write(packed)
            index[key] = (offset, len(packed), hashlib.sha256(data).digest())
            offset += len(packed)
    path = os.path.join(folder, tag + ".index")
    with open(path, "wb") as f:
        f.write(diskcache._seal(pickle.dumps((meta, index), protocol=-1)))
    return path


def build(workloads, cpu=BASELINE, folder=FOLDER):
    """Run ``workloads`` (command lines, one after the other) with every compile of this layer
    collected, compiled for ``cpu``, and write the store. Returns ``(index path, entries,
    the workloads' exit codes)``."""
    with tempfile.TemporaryDirectory() as tmp:
        collect = os.path.join(tmp, "collect")
        cache = os.path.join(tmp, "cache")
        os.makedirs(collect)
        os.makedirs(cache, mode=0o700)
        # (NUMBA_OPT=3: the code users get is optimised fully, whatever this environment says)
        env = dict(os.environ, NUMBA_CPU_NAME=cpu, NUMBA_CPU_FEATURES="", NUMBA_OPT="3",
                   WEFT_CACHE_DIR=cache, NUMBA_CACHE_DIR=os.path.join(tmp, "numba"))
        env[COLLECT_ENV] = collect
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        rc = [subprocess.call(w, env=env) for w in workloads]
        entries = {}
        for name in os.listdir(collect):
            if name.endswith(".entry"):
                with open(os.path.join(collect, name), "rb") as f:
                    key, payload = pickle.load(f)
                entries[key] = payload
    return write_store(entries, cpu, folder), len(entries), rc


def main(argv=None):
    import argparse
    p = argparse.ArgumentParser(prog="python -m weft.native",
                                description="Build or describe weft's shipped machine code.")
    sub = p.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="compile this layer's functions and write the store")
    b.add_argument("--cpu", default=BASELINE, choices=sorted(BASELINE_FEATURES))
    b.add_argument("-n", "--jobs", default="2")
    b.add_argument("tests", nargs="*", default=["tests", "--ignore=tests/cuda"],
                   help="pytest's arguments for the test run whose compiles are collected "
                   "(default: the whole suite but tests/cuda, which compiles for CUDA only: every "
                   "helper signature the suite's kernels use, which are the common ones of users' "
                   "kernels too), before tools/native_workload.py (large inputs, threads, every "
                   "query, Warp's examples)")
    sub.add_parser("status", help="whether this host uses the shipped store, and its size")
    a = p.parse_args(argv)
    if a.cmd == "build":
        cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
               "-n", a.jobs, *a.tests]
        workload = [sys.executable, os.path.join("tools", "native_workload.py")]
        path, n, rc = build([cmd, workload], a.cpu)
        print(f"{path}: {n} compiled signatures (exit codes {rc})")
        return max(rc)
    n = len(STORE)
    print(f"{n} shipped signatures in use" if n else f"shipped store not used: {STORE.reason}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
