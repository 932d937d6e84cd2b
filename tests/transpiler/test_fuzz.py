"""A short run of the kernel mutation fuzzer (tools/fuzz_kernels.py): every mutant of the corpus
kernels transpiles or is rejected with a located KernelError; none is an internal error, a crash
or a hang. (The long run, 10,000+ mutants, is in docs/reliability.md.)"""
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.mark.cold
@pytest.mark.uncached  # transpiles only
def test_two_hundred_mutants_transpile_or_are_located_errors(tmp_path):
    r = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "fuzz_kernels.py"),
                        "--count", "200", "--seed", "7", "--jobs", "2", "--out",
                        str(tmp_path)], capture_output=True, text=True, timeout=600,
                       env=dict(os.environ, PYTHONPATH=ROOT))
    assert r.returncode == 0, r.stdout + r.stderr[-3000:]
    counts = dict(line.split() for line in r.stdout.splitlines()[2:] if len(line.split()) == 2)
    assert int(counts.get("kernel-error", 0)) > 50 and int(counts.get("ok", 0)) > 20
    assert not any(k in counts for k in ("INTERNAL", "CRASH", "HANG"))
