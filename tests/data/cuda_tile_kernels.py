"""Tile kernels run on CUDA (the simulator in CI) and on the CPU by tests/cuda/test_cuda_tiles.py,
and compiled to PTX by its PTX test."""
import weft as wp

TILE = 8


@wp.func
def bump(x: float):
    return x * x + 1.0


@wp.kernel
def chain(a: wp.array2d(dtype=float), b: wp.array2d(dtype=float), c: wp.array2d(dtype=float),
          s: wp.array(dtype=float)):
    i = wp.tid()
    ta = wp.tile_load(a, shape=(TILE, TILE), offset=(i * TILE, 0))
    tb = wp.tile_load(b, shape=(TILE, TILE), offset=(0, 0))
    tc = wp.tile_matmul(ta, tb)
    td = wp.tile_map(wp.tanh, tc) * 2.0 + ta
    wp.tile_store(c, td, offset=(i * TILE, 0))
    wp.tile_atomic_add(s, wp.tile_sum(td), offset=0)


@wp.kernel
def shapes(a: wp.array2d(dtype=float), out: wp.array2d(dtype=float), r: wp.array(dtype=float),
           ri: wp.array(dtype=int)):
    i = wp.tid()
    t = wp.tile_load(a, shape=(4, 8), offset=(i * 4, 0))
    u = wp.tile_map(bump, t) - t * 0.5
    v = wp.tile_ones(shape=(4, 8), dtype=float) * 3.0 + u
    w = wp.tile_transpose(v)
    m = wp.tile_matmul(v, w)
    wp.tile_store(out, wp.tile_map(wp.sin, m * 0.01), offset=(i * 4, 0))
    wp.tile_store(r, wp.tile_max(v), offset=i * 3)
    wp.tile_store(r, wp.tile_min(u), offset=i * 3 + 1)
    wp.tile_store(r, wp.tile_reduce(wp.add, u), offset=i * 3 + 2)
    wp.tile_store(ri, wp.tile_argmax(v), offset=i)


@wp.kernel
def rows(a: wp.array2d(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    t = wp.tile_load(a, shape=(4, 8), offset=(i * 4, 0))
    wp.tile_store(out, wp.tile_reduce(wp.mul, t, axis=1), offset=i * 4)


@wp.kernel
def padded(a: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    t = wp.tile_load(a, shape=16, offset=i * 16 - 3)
    wp.tile_store(out, t * 2.0, offset=i * 16 + 5)


@wp.kernel
def elements(a: wp.array2d(dtype=float), col: wp.array(dtype=float), out: wp.array2d(dtype=float)):
    i, j = wp.tid()
    t = wp.tile_load(a, shape=(4, 4), offset=(i * 4, j * 4))
    c = wp.tile_load(col, shape=4, offset=j * 4)
    x = t[1, 2] * 3.0
    t[0, 0] = x + t[3, 3]
    b = wp.tile_broadcast(wp.tile_reshape(c, shape=(1, 4)), shape=(4, 4))
    wp.tile_store(out, t * b + wp.tile_transpose(t), offset=(i * 4, j * 4))


@wp.kernel
def gemm(A: wp.array2d(dtype=float), B: wp.array2d(dtype=float), C: wp.array2d(dtype=float)):
    i, j = wp.tid()
    acc = wp.tile_zeros(shape=(8, 4), dtype=float)
    count = int(A.shape[1] / 4)
    for k in range(0, count):
        x = wp.tile_load(A, shape=(8, 4), offset=(i * 8, k * 4))
        y = wp.tile_load(B, shape=(4, 4), offset=(k * 4, j * 4))
        wp.tile_matmul(x, y, acc)
    wp.tile_store(C, acc, offset=(i * 8, j * 4))


@wp.kernel
def lane_store(a: wp.array(dtype=float), out: wp.array(dtype=float)):
    i, lane = wp.tid()
    t = wp.tile_load(a, shape=8, offset=i * 8)
    s = wp.tile_sum(t)
    if lane == 0:
        out[i] = s[0]


@wp.kernel
def lane_offset(a: wp.array(dtype=float), out: wp.array(dtype=float)):
    i, lane = wp.tid()
    t = wp.tile_load(a, shape=8, offset=i * 8 + lane)
    wp.tile_store(out, t, offset=i * 8)


@wp.kernel
def extract(a: wp.array2d(dtype=float), b: wp.array2d(dtype=float)):
    i, j, x, y = wp.tid()  # a plain launch: a block of 32 threads per (i, j) with block_dim=32
    tile = wp.tile_load(a, shape=(8, 4), offset=(i * 8, j * 4))
    wp.atomic_add(b, i, j, wp.tile_extract(tile, x, y) * 2.0)


@wp.kernel
def vectors(a: wp.array(dtype=wp.vec3), out: wp.array(dtype=wp.vec3), n: wp.array(dtype=float)):
    i = wp.tid()
    t = wp.tile_load(a, shape=8, offset=i * 8)
    u = t * 2.0 + wp.tile_ones(shape=8, dtype=wp.vec3)
    v = u[3]
    s = wp.tile_sum(u)
    wp.tile_store(out, u, offset=i * 8)
    n[i] = wp.length(v) + s[0][1]


@wp.kernel
def transforms(x: wp.array2d(dtype=wp.vec2d), y: wp.array2d(dtype=wp.vec2d),
               z: wp.array2d(dtype=wp.vec2d)):
    i, j = wp.tid()
    a = wp.tile_load(x, shape=(4, 8), offset=(i * 4, 0))
    wp.tile_fft(a)                      # a power of two: radix-2, a row per thread
    wp.tile_store(y, a, offset=(i * 4, 0))
    b = wp.tile_load(x, shape=(2, 6), offset=(i * 2, 0))
    wp.tile_ifft(b)                     # six: the direct sum
    wp.tile_store(z, b, offset=(i * 2, 0))


@wp.kernel
def factor(a: wp.array2d(dtype=float), b: wp.array2d(dtype=float), l: wp.array2d(dtype=float),
           x: wp.array2d(dtype=float), y: wp.array(dtype=float), z: wp.array(dtype=float)):
    A = wp.tile_load(a, shape=(8, 8))
    B = wp.tile_load(b, shape=(8, 3))
    L = wp.tile_cholesky(A)
    wp.tile_store(l, L)
    wp.tile_store(x, wp.tile_cholesky_solve(L, B))      # three right-hand sides
    v = wp.tile_load(y, shape=8)
    w = wp.tile_lower_solve(L, v)                       # one
    wp.tile_store(z, wp.tile_upper_solve(wp.tile_transpose(L), w))


@wp.kernel
def own_elements(a: wp.array2d(dtype=float), out: wp.array2d(dtype=float)):
    i, lane = wp.tid()  # 16 threads a block: each writes its own element of the tile
    t = wp.tile_zeros(shape=(4, 4), dtype=float)
    t[lane // 4, lane % 4] = a[i * 4 + lane // 4, lane % 4] * 2.0
    wp.tile_store(out, wp.tile_transpose(t) + float(wp.block_dim()), offset=(i * 4, 0))


@wp.kernel
def half_tiles(a: wp.array2d[wp.float16], b: wp.array2d[float], out: wp.array2d[wp.float16]):
    t = wp.tile_load(a, shape=(2, 4))                 # float16: float32 values rounded to half
    u = wp.tile_astype(wp.tile_load(b, shape=(4, 3)), wp.float16)
    wp.tile_store(out, wp.tile_matmul(t, u) + t[:, 0:3])


@wp.kernel
def gather_rows(src: wp.array2d(dtype=float), idx: wp.array(dtype=int),
                dst: wp.array2d(dtype=float)):
    t = wp.tile_load(src, shape=(8, 4))
    ii = wp.tile_load(idx, shape=4)
    wp.tile_store(dst, t[ii, :])          # a gather by a tile of indices (3 repeats)


@wp.kernel
def reversed_dot(a: wp.array2d(dtype=float), u: wp.array(dtype=float), v: wp.array(dtype=float),
                 dst: wp.array2d(dtype=float), d: wp.array(dtype=float)):
    t = wp.tile_load(a, shape=(4, 8))
    wp.tile_store(dst, t[::-1, 6:1:-2])                # a negative step on each axis
    x = wp.tile_load(u, shape=16)
    y = wp.tile_load(v, shape=16)
    wp.tile_store(d, wp.tile_dot(x, y))


@wp.kernel
def scans(a: wp.array2d(dtype=float), s: wp.array2d(dtype=float), e: wp.array2d(dtype=float),
          hi: wp.array2d(dtype=float), lo: wp.array2d(dtype=float)):
    i, _lane = wp.tid()
    t = wp.tile_load(a, shape=(2, 4), offset=(i * 2, 0))
    u = t * t
    wp.tile_store(s, wp.tile_scan_inclusive(u), offset=(i * 2, 0))
    wp.tile_store(e, wp.tile_scan_exclusive(t), offset=(i * 2, 0))
    wp.tile_store(hi, wp.tile_scan_max_inclusive(t), offset=(i * 2, 0))
    wp.tile_store(lo, wp.tile_scan_min_inclusive(t), offset=(i * 2, 0))


@wp.kernel
def sort_pairs(keys: wp.array(dtype=float), vals: wp.array(dtype=wp.vec2), ok: wp.array(dtype=float),
               ov: wp.array(dtype=wp.vec2)):
    i, _lane = wp.tid()
    k = wp.tile_load(keys, shape=12, offset=i * 12)
    v = wp.tile_load(vals, shape=12, offset=i * 12)
    wp.tile_sort(k, v)
    wp.tile_store(ok, k, offset=i * 12)
    wp.tile_store(ov, v, offset=i * 12)


@wp.kernel
def scalar_uses(a: wp.array(dtype=float), s: wp.array(dtype=float), out: wp.array(dtype=float),
                v: wp.array(dtype=wp.vec2)):
    i, _lane = wp.tid()
    t = wp.tile_load(a, shape=4, offset=i * 4)
    u = t * s[0]  # a scalar every thread holds, which the tile operation takes once
    wp.tile_store(out, u, offset=i * 4)
    m = wp.tile_sum(u)
    total = m[0] * 3.0
    v[i] = wp.vec2(total, total * total)  # every thread stores the same vector


@wp.kernel
def diag_axpy(a: wp.array2d(dtype=float), d: wp.array(dtype=float), s: wp.array(dtype=float),
              x: wp.array(dtype=float), out: wp.array2d(dtype=float), y: wp.array(dtype=float)):
    i, _lane = wp.tid()
    t = wp.tile_load(a, shape=(4, 4))
    v = wp.tile_load(d, shape=4)
    wp.tile_store(out, wp.tile_diag_add(t, v * v))
    u = wp.tile_load(x, shape=4)
    wp.tile_axpy(s[0], v, u)  # u += s[0] * v, s[0] differentiable
    wp.tile_store(y, u)


@wp.kernel
def indexed(a: wp.array2d(dtype=float), ii: wp.array(dtype=int), rows: wp.array2d(dtype=float),
            cols: wp.array2d(dtype=float), v: wp.array(dtype=float), added: wp.array(dtype=float)):
    i, _lane = wp.tid()
    idx = wp.tile_load(ii, shape=4)
    t = wp.tile_load_indexed(a, indices=idx, shape=(4, 3), axis=0)
    wp.tile_store_indexed(rows, indices=idx, t=t * 2.0, axis=0)
    wp.tile_store_indexed(cols, indices=idx, t=wp.tile_transpose(t), axis=1)
    u = wp.tile_load(v, shape=4)
    wp.tile_atomic_add_indexed(added, indices=idx, t=u, axis=0)


@wp.func
def sines(t: wp.tile(dtype=float, shape=(4, 8)), s: float):
    return wp.tile_map(wp.sin, t) * s


@wp.func
def rows_of(a: wp.array2d(dtype=float), i: int):
    return wp.tile_load(a, shape=(4, 8), offset=(i * 4, 0))


@wp.func
def mix(t: wp.tile[float, 4, 8], u: wp.tile[float, 4, 8]):
    v = sines(t, 2.0) + u
    return v * u


@wp.func
def total(t: wp.tile[float, 4, 8]):
    return wp.tile_sum(t)[0]


@wp.kernel
def tile_funcs(a: wp.array2d(dtype=float), b: wp.array2d(dtype=float),
               out: wp.array2d(dtype=float), s: wp.array(dtype=float)):
    # funcs taking, making and returning tiles (inlined into the kernel on CUDA), one calling
    # another, one called twice
    i = wp.tid()
    t = rows_of(a, i)
    u = rows_of(b, i)
    r = mix(t, u)
    wp.tile_store(out, r, offset=(i * 4, 0))
    s[i] = total(r) + total(t)


@wp.kernel
def view_sets(a: wp.array2d(dtype=float), out: wp.array2d(dtype=float)):
    # tiles assigned into views of tiles, at offsets known when compiling and when running,
    # and values set into a view
    i = wp.tid()
    t = wp.tile_load(a, shape=(4, 8), offset=(i * 4, 0))
    b = wp.tile_zeros(dtype=float, shape=(4, 8))
    b[1:3, 2:6] = t[0:2, 4:8] * t[2:4, 0:4]
    wp.tile_assign(b, wp.tile_view(t, offset=(2, 0), shape=(2, 4)), offset=(0, i + 1))
    b[3, 0:2] = wp.tile_ones(shape=2, dtype=float) * 0.5
    wp.tile_store(out, b, offset=(i * 4, 0))


@wp.kernel
def row_copies(a: wp.array2d(dtype=float), out: wp.array2d(dtype=float)):
    # rows of one tile assigned into another in a loop (which carries the tile: on CUDA its
    # adjoint is refused)
    t = wp.tile_load(a, shape=(4, 8))
    b = wp.tile_zeros(dtype=float, shape=(4, 8))
    for i in range(3):
        src = t[3 - i]
        dst = b[i]
        wp.tile_assign(dst, src)
    wp.tile_store(out, b)


@wp.kernel
def per_thread(a: wp.array(dtype=float), v: wp.array(dtype=wp.vec3), m: wp.array(dtype=wp.mat22),
               out: wp.array(dtype=float), ov: wp.array(dtype=wp.vec3),
               om: wp.array(dtype=wp.mat22), s: wp.array(dtype=float)):
    # wp.tile(x) of each thread's value and untile back (scalars, a vector's components as a
    # column, vectors and matrices kept whole), with tile operations between
    i, lane = wp.tid()
    k = i * 4 + lane
    t = wp.tile(a[k] * a[k])
    y = wp.untile(wp.tile_map(wp.sin, t) + t)
    out[k] = y * 2.0
    ov[k] = wp.untile(wp.tile(v[k]) * 2.0) + wp.untile(wp.tile(v[k], preserve_type=True))
    om[k] = wp.untile(wp.tile(m[k] * a[k]))
    wp.tile_atomic_add(s, wp.tile_sum(t), offset=0)


@wp.kernel
def carried_rows(a: wp.array2d(dtype=float), out: wp.array2d(dtype=float)):
    # a tile a loop carries, each row from the one before: its adjoint reads the loop's tiles
    # back from a stack (in shared memory: the trip count is known when compiling)
    t = wp.tile_load(a, shape=(4, 8))
    b = wp.tile_zeros(dtype=float, shape=(4, 8))
    for i in range(3):
        b[i + 1] = wp.tile_map(wp.sin, t[3 - i]) * b[i] + t[i]
    wp.tile_store(out, b)


@wp.kernel
def axis_sums(x: wp.array2d(dtype=float), y: wp.array(dtype=float), z: wp.array(dtype=float)):
    # sums along each axis (the generated code transposes for axis 0)
    a = wp.tile_load(x, shape=(2, 3))
    wp.tile_store(y, wp.tile_sum(a * a, axis=0))
    wp.tile_store(z, wp.tile_sum(wp.tile_map(wp.sin, a), axis=1))


@wp.kernel
def row_sums(a: wp.array2d(dtype=float), out: wp.array(dtype=float)):
    # Warp's tile_sum_kernel: a loop of a trip count known when running, accumulating into a
    # tile (the adjoint needs none of the loop's tiles back: no stack)
    i = wp.tid()
    count = int(a.shape[1] / 4)
    s = wp.tile_zeros(shape=1, dtype=float)
    for j in range(count):
        t = wp.tile_load(a[i], shape=4, offset=j * 4)
        s += wp.tile_sum(wp.tile_map(wp.sin, t)) * 0.5
    wp.tile_store(out, s, offset=i)


@wp.kernel
def from_thread(a: wp.array(dtype=float), out: wp.array(dtype=float), s: wp.array(dtype=float)):
    # tile_from_thread: the block's last thread's value, everywhere in the tile
    i = wp.tid()
    v = a[i] * a[i]
    t = wp.tile_from_thread(shape=(2, 3), value=v, thread_idx=wp.block_dim() - 1)
    out[i] = wp.tile_extract(t, 1, 2) + float(i)
    wp.tile_atomic_add(s, wp.tile_sum(wp.tile_map(wp.sin, t)), offset=0)


@wp.kernel
def block_sines(a: wp.array(dtype=float), out: wp.array(dtype=float)):
    # a plain launch's block of threads as a tile (wp.jvp compiles it for the block size too)
    i = wp.tid()
    t = wp.tile(a[i] * 2.0)
    out[i] = wp.untile(wp.tile_map(wp.sin, t)) + wp.tile_sum(t)[0]


BIG = 4096  # float32 elements: 16 KiB a tile, so the kernel's tiles pass the 48 KiB static limit


@wp.kernel
def big_tiles(x: wp.array2d(dtype=float), w: wp.array2d(dtype=wp.float64),
              out: wp.array2d(dtype=float), total: wp.array(dtype=wp.float64)):
    i = wp.tid()
    a = wp.tile_load(x[i], shape=BIG)
    b = wp.tile_load(w[i], shape=BIG // 4)
    c = a * a + wp.tile_map(wp.sin, a)
    wp.tile_store(out[i], c)
    wp.tile_store(total, wp.tile_sum(b * b), offset=i)


@wp.kernel
def lanes_add(idx: wp.array(dtype=int), v: wp.array(dtype=float), out: wp.array2d(dtype=float)):
    # t[i, j] += x by every thread of the block: each adds its own x (Warp's tile_add_inplace)
    i, j = wp.tid()
    s = wp.tile_zeros(shape=(1, 3), dtype=float)
    k = idx[i * 8 + j]
    x = v[i * 8 + j]
    s[0, k] += x * x
    s[0, 2 - k] -= x
    wp.tile_store(out, s * 2.0, offset=(i, 0))


@wp.kernel
def scatters(a: wp.array(dtype=float), out: wp.array(dtype=float)):
    # each thread's scatters: adds at an element two threads share (thread 5 masked off),
    # writes at its neighbour's element (the even threads)
    b, i = wp.tid()
    x = a[b * 8 + i]
    t = wp.tile_zeros(shape=4, dtype=float)
    wp.tile_scatter_add(t, i % 4, x * x, i != 5)
    u = wp.tile_zeros(shape=8, dtype=float)
    wp.tile_scatter_masked(u, (i + 1) % 8, x * 3.0, i % 2 == 0)
    out[b * 8 + i] = wp.tile_extract(u, i) + wp.tile_extract(t, i % 4) * 0.5


@wp.kernel
def random_tiles(seed: int, out: wp.array2d(dtype=float), outi: wp.array2d(dtype=int)):
    i = wp.tid()
    rng = wp.rand_init(seed, i)
    t = wp.tile_randf(shape=(4, 8), rng=rng)
    u = wp.tile_randi(shape=(4, 8), rng=rng, min=3, max=50)
    wp.tile_store(out, t * 2.0, offset=(i * 4, 0))
    wp.tile_store(outi, u, offset=(i * 4, 0))


@wp.kernel
def stacks(out: wp.array(dtype=int), counts: wp.array(dtype=int), popped: wp.array(dtype=float),
           vecs: wp.array(dtype=wp.vec2), slots: wp.array(dtype=int)):
    # a block's tile stack (capacity 6) pushed by its 8 threads (the even ones, then all:
    # two overflow), counted, popped by every thread (two find it empty), cleared
    b, j = wp.tid()
    s = wp.tile_stack(capacity=6, dtype=int)
    slot = wp.tile_stack_push(s, j * 10 + b, j % 2 == 0)
    counts[b * 4 + 0] = wp.tile_stack_count(s)
    wp.tile_stack_push(s, 100 + j, j % 2 == 1)
    counts[b * 4 + 1] = wp.tile_stack_count(s)
    v, at = wp.tile_stack_pop(s)
    out[b * 8 + j] = v
    counts[b * 4 + 2] = wp.tile_stack_count(s)
    f = wp.tile_stack(capacity=2, dtype=float)
    wp.tile_stack_push(f, float(slot), j == 3)
    fv, _fs = wp.tile_stack_pop(f)
    popped[b * 8 + j] = fv
    slots[b * 8 + j] = at
    wp.tile_stack_clear(s)
    counts[b * 4 + 3] = wp.tile_stack_count(s)
    vs = wp.tile_stack(capacity=8, dtype=wp.vec2)
    wp.tile_stack_push(vs, wp.vec2(float(j), float(b)), True)
    vv, _vslot = wp.tile_stack_pop(vs)
    vecs[b * 8 + j] = vv


@wp.kernel
def vec_full(a: wp.array2d(dtype=float), out: wp.array2d(dtype=wp.vec3)):
    # a tile of vectors filled with one vector (each element its components)
    i = wp.tid()
    v = wp.tile_full(shape=4, value=wp.vec3(a[i, 0], 2.0, a[i, 1] * a[i, 1]))
    wp.tile_store(out[i], v * 2.0)


@wp.kernel
def bits(a: wp.array(dtype=wp.uint32), out: wp.array(dtype=wp.uint32)):
    # each thread's bit combined into tile elements (Warp's tile_bit_*_inplace: atomics)
    b, j = wp.tid()
    s = wp.tile_zeros(shape=3, dtype=wp.uint32)
    s[2] = wp.uint32(0xFFFFFFFF)
    m = wp.uint32(1) << wp.uint32(j)
    s[0] |= a[b] & m
    s[1] ^= m
    s[2] &= ~m if j % 2 == 0 else wp.uint32(0xFFFFFFFF)  # (the even threads clear theirs)
    wp.tile_store(out, s, offset=b * 3)


@wp.kernel
def own_rows(a: wp.array(dtype=float), out: wp.array(dtype=wp.mat22)):
    # each thread writes a row of its own matrix element (Warp's composite row writes)
    b, j = wp.tid()
    t = wp.tile_zeros(dtype=wp.mat22, shape=4)
    x = a[b * 4 + j]
    t[j][1] = wp.vec2(x, x * x)
    wp.tile_atomic_add(out, t * 2.0, offset=b * 4)  # (its old values unused)


@wp.kernel
def vec_adds(a: wp.array(dtype=wp.vec2), out: wp.array(dtype=wp.vec2)):
    # s[e] += v by every thread of the block, for a tile of vectors: each component atomically
    b, j = wp.tid()
    s = wp.tile_zeros(shape=2, dtype=wp.vec2)
    s[j % 2] += a[b * 4 + j] * 2.0
    wp.tile_store(out, s, offset=b * 2)
