"""`ltrlib warm-up` (ltrlib.warmup): numba's cache holds every kernel it runs, so that a
later process reads them back rather than compiling them, and it runs every kernel of
ltrlib that a notebook may need."""

import subprocess
import sys

#: Kernels a notebook reaches only on input it refuses: the warm-up leaves them to compile
#: on demand. `_first_line_beyond` finds the line of a feature index too large to load.
ON_REFUSED_INPUT_ONLY = {"ltrlib.data.svmlight.kernels._first_line_beyond"}

# Run in a fresh process, a warm-up: the ltrlib kernels (inlined helpers aside, which
# numba compiles into their callers) that it did not run, and those of ltrlib, ranx or numba's
# typed containers it compiled instead of reading them from the cache.
CHECK = """
import importlib, pkgutil, sys
import ltrlib
from numba.core.dispatcher import Dispatcher
from ltrlib.warmup import compile_kernels

def kernels(prefixes):
    for name, module in list(sys.modules.items()):
        if module is None or not name.startswith(prefixes):
            continue
        for attr, obj in vars(module).items():
            if isinstance(obj, Dispatcher) and obj.py_func.__module__ == name:
                yield f"{name}.{attr}", obj

for info in pkgutil.walk_packages(ltrlib.__path__, "ltrlib."):
    if not info.name.endswith("__main__"):
        importlib.import_module(info.name)
compile_kernels(progress=False)
ours = dict(kernels(("ltrlib.",)))
# Run: called here (loaded or compiled), or called by a kernel that was run (numba builds a
# callee into its caller, so a caller read from the cache leaves its callees untouched).
run = {id(k) for k in ours.values() if k.signatures}
todo = [k for k in ours.values() if k.signatures]
while todo:
    caller = todo.pop()
    for name in caller.py_func.__code__.co_names:
        callee = caller.py_func.__globals__.get(name)
        if isinstance(callee, Dispatcher) and id(callee) not in run:
            run.add(id(callee))
            todo.append(callee)
not_run = sorted(name for name, k in ours.items() if k.targetoptions.get("inline") != "always"
                 and id(k) not in run)
compiled = sorted(name for name, k in kernels(("ltrlib.", "ranx.", "numba.typed."))
                  if sum(k.stats.cache_misses.values()))
print(not_run)
print(compiled)
"""


def test_the_warm_up_leaves_every_kernel_it_runs_in_numbas_cache_and_runs_every_ltrlib_kernel():
    def check():
        result = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True, check=True)
        not_run, compiled = result.stdout.strip().splitlines()[-2:]
        return set(eval(not_run)), eval(compiled)  # noqa: S307 - lists of names the check printed

    not_run, compiled = check()
    assert not_run == ON_REFUSED_INPUT_ONLY
    if compiled:  # a kernel changed since `make install` warmed the cache: this run refilled it
        not_run, compiled = check()
    assert compiled == []
