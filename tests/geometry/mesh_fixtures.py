"""The mesh/BVH cores compiled once per test process, through weft's verified cache: loaded from
weft's cache, else from the machine code shipped with weft (``weft.native.shipped``, whose build
runs these tests and so holds these signatures), else compiled."""
import functools


@functools.lru_cache(maxsize=None)
def cpu_cores():
    """Compiled with ``CPU_JIT_OPTIONS`` but without the IR inlining of ``compile_cpu``: the
    same results (inlining changes no arithmetic; the benchmark checks the inlined build
    against Warp), in a fraction of the compile time, since the tests call many entry points
    directly from Python and each inlined one would compile its whole call tree."""
    from weft.native.geometry import mesh_query
    return mesh_query.compile_for(cached_jits(mesh_query.CPU_JIT_OPTIONS)[0])


def cached_jits(options):
    """``compile_cpu``'s two jits (plain, and inlined into callers) through weft's verified
    cache: loaded from weft's cache or from the machine code shipped with weft (whose build runs
    these tests), so a new machine compiles none of these cores."""
    from weft.core.diskcache import njit
    return njit(**options), njit(inline="always", **options)


def python_cores():
    """The uncompiled cores (the module-level functions), as a namespace."""
    from weft.native.geometry import mesh_query as MQ
    ns = {}
    for mod, name in MQ.PORTABLE:
        ns[name] = getattr(mod, name) if mod is not None else getattr(MQ, name)
    return ns


def layout_walk(bounds, links, prims):
    """A BVH's pre-order walk in weft's layout, as ``mesh_scenes.tree_digest`` expects."""
    out = []
    for p in range(links.shape[0]):
        leaf = links[p, 0] >= 0
        out.append((leaf, tuple(int(x) for x in prims[links[p, 0]:links[p, 1]]) if leaf else (),
                    tuple(float(x) + 0.0 for x in bounds[p, :3]),
                    tuple(float(x) + 0.0 for x in bounds[p, 3:])))
    return out
