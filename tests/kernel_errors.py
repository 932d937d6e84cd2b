"""Compile a kernel written to a real file and return the KernelError it raises (so that the
error's file, line, source line and caret can be checked)."""
import importlib.util

import pytest

from weft.core.errors import KernelError


def kernel_error(tmp_path, params, body, name="bad_kernel", prelude=""):
    """The KernelError of ``@wp.kernel def bad(<params>): <body lines>`` in ``<name>.py``; its
    body starts on line 6 of that file (after ``prelude``'s lines, if any)."""
    path = tmp_path / f"{name}.py"
    lines = "".join(f"    {line}\n" for line in body)
    path.write_text(f"import weft as wp\n{prelude}\n\n@wp.kernel\ndef bad({params}):\n{lines}")
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    with pytest.raises(KernelError) as e:
        mod.bad.compiled()
    return e.value
