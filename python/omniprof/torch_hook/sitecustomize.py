"""sitecustomize for `omniprof run --torch` (docs/python.md, "PyTorch operators").

The launcher puts this folder first on PYTHONPATH and sets OMNIPROF_TORCH=true. Python imports
this file at start; it changes nothing until the program itself imports torch. Then, right after
torch's import, it turns on torch's own NVTX path for operators (the one
torch.autograd.profiler.emit_nvtx uses, with record_shapes): every aten / autograd operator is an
NVTX range named "aten::addmm, seq = 12, op_id = 40, sizes = [[64, 128], [128, 256]]" (backward
operators: "stashed seq = N", the forward's sequence number), which omniprof records as regions
on the thread that ran them (--marker-trace); the kernels they launch are linked to them through
their launching calls (docs/python.md). The program's code is not changed, CUDA is not
initialized by us (emit_nvtx's own torch.cuda.synchronize() is skipped), and a failure leaves
the program running without operator ranges (one line on stderr).

Shapes (OMNIPROF_TORCH_SHAPES): torch formats the shape strings itself, which alone costs about
two thirds of torch.profiler's added time (docs/python.md). "N" (default 5): shapes during the
first N optimizer steps (a global optimizer step hook counts them), then the same ranges without
shapes (the switch happens at the end of step N; a program without a torch.optim optimizer keeps
shapes throughout); "true": shapes on every call; "false": never.

The sitecustomize this one shadows (Debian's, a virtual environment's) is run too."""
import importlib.abc
import importlib.machinery
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))


def _chain():
    """Run the next sitecustomize on sys.path, the one this file shadows."""
    for d in sys.path:
        if not d or os.path.abspath(d) == _HERE:
            continue
        p = os.path.join(d, "sitecustomize.py")
        if os.path.isfile(p):
            with open(p, "rb") as f:
                code = compile(f.read(), p, "exec")
            exec(code, {"__name__": "sitecustomize", "__file__": p})
            return


def _nvtx(prof, torch, shapes, ctx=None):
    """Leave emit_nvtx context `ctx` (if any) and enter a new one; emit_nvtx's own
    torch.cuda.synchronize() calls are skipped (they would initialize or synchronize CUDA)."""
    sync = torch.cuda.synchronize
    torch.cuda.synchronize = lambda *a, **k: None
    try:
        if ctx is not None:
            ctx.__exit__(None, None, None)
        ctx = prof.emit_nvtx(enabled=True, record_shapes=shapes)
        ctx.__enter__()
    finally:
        torch.cuda.synchronize = sync
    sys.modules[__name__]._omniprof_torch_ctx = ctx  # kept alive to the end
    return ctx


def _shape_steps():
    v = os.environ.get("OMNIPROF_TORCH_SHAPES", "5").strip().lower()
    if v in ("true", "all"):
        return -1
    if v == "false":
        return 0
    try:
        n = int(v)
    except ValueError:
        n = -2
    if n < 0:
        sys.stderr.write("omniprof: --torch: OMNIPROF_TORCH_SHAPES=%r is not true, false or a number "
                         "of steps; using 5\n" % v)
        n = 5
    return n


def _enable():
    import torch
    import torch.autograd.profiler as prof
    n = _shape_steps()
    ctx = _nvtx(prof, torch, n != 0)
    if n <= 0:
        return
    state = {"steps": 0, "ctx": ctx, "handle": None}

    def after_step(optimizer, args, kwargs):
        state["steps"] += 1
        if state["steps"] < n or state["handle"] is None:
            return
        state["handle"].remove()
        state["handle"] = None
        try:
            state["ctx"] = _nvtx(prof, torch, False, state["ctx"])
        except Exception as e:  # never break the program: shapes stay on
            sys.stderr.write("omniprof: --torch: shapes stay on (%s: %s)\n" % (type(e).__name__, e))

    from torch.optim.optimizer import register_optimizer_step_post_hook
    state["handle"] = register_optimizer_step_post_hook(after_step)


class _Loader(importlib.abc.Loader):
    def __init__(self, inner):
        self.inner = inner

    def create_module(self, spec):
        return self.inner.create_module(spec)

    def exec_module(self, module):
        self.inner.exec_module(module)
        try:
            _enable()
        except Exception as e:  # never break the program
            sys.stderr.write("omniprof: --torch: operator ranges not enabled (%s: %s)\n" % (type(e).__name__, e))


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name != "torch":
            return None
        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is not None and spec.loader is not None:
            spec.loader = _Loader(spec.loader)
        return spec


if os.environ.get("OMNIPROF_TORCH", "") == "true":
    sys.meta_path.insert(0, _Finder())
try:
    _chain()
except Exception as e:
    sys.stderr.write("omniprof: --torch: the shadowed sitecustomize failed (%s: %s)\n" % (type(e).__name__, e))
