"""Generated CUDA code compiles through numba-cuda's pipeline with weft's linear-time SSA
reconstruction, liveness and statement walk, and without ``InlineClosureLikes``
(``numba_start._install_cuda_pipeline``). These give Numba's own IR, so the PTX must be
numba-cuda's own, text for text: checked here on kernels with vectors, loops (a stack of the
loop's values in the adjoint), structs and branches, forward, adjoint and tangent. Only the
compile counter Numba puts in mangled names may differ. (Checked once on every corpus kernel
too: 84 of 84 entries identical, docs/performance.md, stop 54.)"""
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

CODE = """
import contextlib, re
import numpy as np, weft as wp, cuda_kernels as ck
from numba.cuda import compiler as cuda_compiler
from weft.runtime import numba_passes, numba_start
from weft.runtime.ptx import compile_ptx

n = 4
v3 = wp.zeros(n, dtype=wp.vec3); f = wp.zeros(n, dtype=float)
cases = {"step": (ck.step, [v3, v3, 0.1, v3]), "power_loop": (ck.power_loop, [f, 3, f]),
         "bodies": (ck.bodies, [wp.zeros(n, dtype=ck.Body), ck.Params(w=f),
                                wp.zeros(n, dtype=ck.Body)])}
weft_pipeline = numba_start.compiling_generated_cuda_code
ran = []  # weft's SSA pass, counted: the pipeline in use
numba_start._install_cuda_pipeline()
ssa_pass = numba_passes.for_cuda().ReconstructSSAByMentions
numbas_run = ssa_pass.run_pass
ssa_pass.run_pass = lambda self, state: ran.append(1) or numbas_run(self, state)
norm = lambda text: re.sub(r"B\\d+v\\d+B", "BvB", text)  # Numba's compile counter
for name, (k, args) in cases.items():
    numba_start.compiling_generated_cuda_code = contextlib.nullcontext  # numba-cuda's own
    theirs = compile_ptx(k, args)
    assert not ran
    for kind in theirs:  # compile again: new dispatchers' compiles, not the cache
        k.compiled("cuda").entry(kind, "cuda").overloads.clear()
    numba_start.compiling_generated_cuda_code = weft_pipeline
    ours = compile_ptx(k, args)
    assert len(ran) >= 3
    ran.clear()
    for kind in ours:
        print(name, kind, norm(ours[kind]) == norm(theirs[kind]), len(ours[kind].splitlines()))

class Probe(cuda_compiler.CUDACompiler):
    def __init__(self, state):
        self.state = state
from numba.cuda.core.compiler import StateDict
from numba.cuda.flags import CUDAFlags
state = StateDict(); state.flags = CUDAFlags(); state.func_ir = None
plain = [p.__name__ for p, _ in Probe(state).define_pipelines()[0].passes]
with numba_passes.compiling_generated_code():
    ours = [p.__name__ for p, _ in Probe(state).define_pipelines()[0].passes]
print("passes", sorted(set(ours) - set(plain)), sorted(set(plain) - set(ours)))
"""


@pytest.mark.ptx
def test_weft_passes_give_numba_cudas_own_ptx():
    pytest.importorskip("numba.cuda")
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    env["PYTHONPATH"] = ROOT + os.pathsep + os.path.join(ROOT, "tests", "data")
    r = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, env=env,
                       timeout=900)
    if "NvvmSupportError" in r.stderr or "libNVVM cannot be found" in r.stderr:
        pytest.skip("NVVM is not installed (pip install 'numba-cuda[cu13]')")
    assert r.returncode == 0, r.stderr[-3000:]
    lines = [ln.split() for ln in r.stdout.splitlines()]
    compared = [ln for ln in lines if ln[0] != "passes"]
    assert len(compared) == 9                                   # 3 kernels x 3 kinds
    assert all(same == "True" for _, _, same, _ in compared), compared
    assert all(int(size) > 50 for *_, size in compared)         # real code, not empty entries
    passes = r.stdout.splitlines()[-1]
    assert passes == "passes ['ReconstructSSAByMentions'] ['InlineClosureLikes', 'ReconstructSSA']"
