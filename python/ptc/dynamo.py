"""ptc/dynamo.py - the public surface of the bytecode capture (issue 6):
ptc.compile, ptc.disable, ptc.reset, the capture half of ptc.explain and
ptc.compile_stats.

    fn = ptc.compile(f)                       # or @ptc.compile / @ptc.compile(backend="eager")
    model = ptc.compile(module)               # an nn.Module wrapper (OptimizedModule)
    report = ptc.explain(f, x, y)             # graphs, breaks, guards, op counts

While a compiled callable runs, the current thread has a capture config
(_C.dyn_enable); the PEP 523 hook in ptc._C (dyn_hook.c) then captures every
Python frame it enters (outside the standard library, torch and ptc), traces
it into a graph compiled by libptc, caches the result behind guards in the
code object and falls back to plain Python for what it cannot capture.
CPython 3.11 and 3.12 only.
"""

import functools
import sys

from . import _C

__all__ = ["compile", "disable", "reset", "explain", "compile_stats", "Config",
           "OptimizedModule", "CaptureExplanation", "Unsupported"]

_BACKENDS = ("cpu", "cuda", "eager", "auto", "ref")


def _check_supported():
    """Raises RuntimeError unless this Python/ptc._C can capture bytecode."""
    if sys.version_info[:2] not in ((3, 11), (3, 12)):
        raise RuntimeError("ptc.compile: the bytecode capture supports CPython 3.11 and 3.12 "
                           "only (this is %d.%d); use ptc.from_fx on a torch.fx graph instead"
                           % sys.version_info[:2])
    if not hasattr(_C, "dyn_enable") or not getattr(_C, "DYN_SUPPORTED", 0):
        raise RuntimeError("ptc.compile: this ptc._C was built without the bytecode capture "
                           "(meson option -Ddynamo=false)")


def _unsupported_class():
    try:
        cls = _C._dyn_unsupported_error()
    except Exception:  # noqa: BLE001 - not available in this build / not yet
        cls = None
    return cls


class Unsupported(RuntimeError):
    """Placeholder; replaced by the C side's class (a RuntimeError subclass)
    raised for a graph break under fullgraph=True, when it is available."""


def _resolve_backend(backend):
    if backend not in _BACKENDS:
        raise ValueError("ptc.compile: backend must be one of %s, got %r"
                         % (", ".join(repr(b) for b in _BACKENDS), backend))
    # "auto" stays "auto": each captured graph picks cuda or cpu from the
    # device of its tensors (_dyn_graph.OutputGraph.compile)
    return backend


class Config:
    """The capture config of one ptc.compile call (read by the C hook and
    the evaluator): backend, mode, dynamic (None: automatic; True: every dim
    >= 2 dynamic; False: static), fullgraph, cache_size_limit (compiled
    versions per code object before it runs plain Python; default 8),
    cache_key (the part of the options cache entries are keyed by) and
    graphs_log (list of info dicts the converter appends, one per graph)."""

    def __init__(self, backend="cpu", mode=None, dynamic=None, fullgraph=False,
                 cache_size_limit=8):
        self.backend = backend
        self.mode = mode
        self.dynamic = dynamic
        self.fullgraph = bool(fullgraph)
        self.cache_size_limit = int(cache_size_limit)
        self.graphs_log = []

    @property
    def cache_key(self):
        """The options a cache entry depends on: an entry made under one
        config runs for another only when their cache_key are equal."""
        return (self.backend, self.mode, self.dynamic, self.fullgraph)

    def __repr__(self):
        return ("Config(backend=%r, mode=%r, dynamic=%r, fullgraph=%r, cache_size_limit=%d, "
                "graphs=%d)" % (self.backend, self.mode, self.dynamic, self.fullgraph,
                                self.cache_size_limit, len(self.graphs_log)))


def _run_with(config, fn, args, kwargs):
    """Calls fn(*args, **kwargs) with `config` as this thread's capture
    config (None: capture off), restoring the previous one afterwards."""
    prev = _C.dyn_enable(config)
    try:
        return fn(*args, **kwargs)
    finally:
        _C.dyn_enable(prev)


def _wrap_function(fn, config):
    run = _C.dyn_run

    @functools.wraps(fn)
    def ptc_compiled(*args, **kwargs):
        return run(config, fn, *args, **kwargs)

    ptc_compiled._ptc_config = config
    ptc_compiled._ptc_orig = fn
    return ptc_compiled


# _module_call(m, *args, **kwargs) calls module m. Its code gets a file name
# the capture's file rules do not skip ("<ptc.compile module call>"), so an
# OptimizedModule of a torch module (nn.LayerNorm, nn.Sequential, ...: frames
# of torch's own files are never captured) runs its forward through it: the
# call of `m` is traced as a module call in user code would be, instead of
# the whole forward running eagerly. Used by OptimizedModule.forward and the
# C call path (dyn_hook.c run_module).
_MODULE_CALL_NS = {}
exec(compile("def _module_call(m, *args, **kwargs):\n    return m(*args, **kwargs)\n",
             "<ptc.compile module call>", "exec"), _MODULE_CALL_NS)
_module_call = _MODULE_CALL_NS["_module_call"]


def _library_module(mod):
    """Whether mod's forward is a function of a file the capture skips
    (torch's own modules): it then runs through _module_call."""
    fwd = getattr(type(mod), "forward", None)
    code = getattr(fwd, "__code__", None)
    skipped = getattr(_C, "_dyn_skipped", None)
    if code is None or skipped is None:
        return False
    try:
        return skipped(code) == 1
    except Exception:  # noqa: BLE001 - the rules could not be read: as before
        return False


def _module_base():
    import torch
    return torch.nn.Module


class _LazyModuleClass:
    cls = None



def _optimized_module_class():
    """OptimizedModule, defined on first use (torch is imported lazily)."""
    if _LazyModuleClass.cls is not None:
        return _LazyModuleClass.cls
    import torch

    class OptimizedModule(torch.nn.Module):
        """An nn.Module whose forward runs the original module under capture.
        Attribute reads and writes reach the original module (`_orig_mod`);
        parameters, state_dict (keys prefixed "_orig_mod."), train/eval and
        .to() work through it as a submodule."""

        def __init__(self, mod, config):
            super().__init__()
            self._orig_mod = mod  # registered as a submodule: state_dict, .to(), ... work
            object.__setattr__(self, "_ptc_config", config)

        def forward(self, *args, **kwargs):
            mod = self._modules["_orig_mod"]
            if _library_module(mod):
                return _C.dyn_run(self._ptc_config, _module_call, mod, *args, **kwargs)
            return _C.dyn_run(self._ptc_config, mod, *args, **kwargs)


        def __getattr__(self, name):
            if name == "_orig_mod":
                return self._modules["_orig_mod"]
            try:
                return super().__getattr__(name)
            except AttributeError:
                return getattr(self._modules["_orig_mod"], name)

        def __setattr__(self, name, value):
            # before _orig_mod exists (nn.Module.__init__) and for the
            # wrapper's own fields: here; else the write reaches the original
            # (`training` is kept in both so that both read the same mode)
            mods = self.__dict__.get("_modules")
            if name in ("_orig_mod", "_ptc_config") or not mods or "_orig_mod" not in mods:
                return super().__setattr__(name, value)
            if name == "training":
                super().__setattr__(name, value)
            setattr(mods["_orig_mod"], name, value)

        def __delattr__(self, name):
            mods = self.__dict__.get("_modules")
            if mods and "_orig_mod" in mods and name not in ("_orig_mod", "_ptc_config") \
                    and name not in self.__dict__:
                return delattr(mods["_orig_mod"], name)
            return super().__delattr__(name)

        def __repr__(self):
            return "OptimizedModule(%r)" % (self._modules["_orig_mod"],)

    if hasattr(_C, "dyn_call_descriptor"):
        # calls run the wrapped module's forward under capture, skipping both
        # nn.Module.__call__ layers when they would run no hooks (else
        # nn.Module.__call__ itself: hooks, then forward above); a C method
        # descriptor, so a call makes no Python frame
        OptimizedModule.__call__ = _C.dyn_call_descriptor(OptimizedModule)
    _LazyModuleClass.cls = OptimizedModule
    return OptimizedModule


def __getattr__(name):
    if name == "OptimizedModule":
        return _optimized_module_class()
    raise AttributeError("module 'ptc.dynamo' has no attribute %r" % name)


def compile(fn_or_module=None, *, backend="cpu", mode=None, dynamic=None, fullgraph=False,
            cache_size_limit=8):
    """Captures the PyTorch operations of a function or nn.Module from its
    bytecode as it runs and compiles them with libptc.

    fn_or_module: a callable or an nn.Module (the result is then an
    OptimizedModule: calling it runs the module's forward under capture and
    attribute access reaches the original). Without it, returns a decorator
    (`@ptc.compile(backend="eager")`). backend: "cpu", "cuda", "eager" (the
    captured torch.fx graph runs eagerly: tests the capture alone), "ref"
    or "auto" (each captured graph runs on cuda when its tensors are CUDA
    tensors and ptc's cuda backend is available, else on cpu). mode: as ptc.from_fx. dynamic: None = automatic (a size that
    changes between calls becomes dynamic at the recompile), True = every
    dim dynamic, False = always specialise. fullgraph: a graph break raises
    (the exception names the construct and file:line) instead of splitting
    the graph. cache_size_limit: compiled versions per code object (per
    `self` object for entries specialised on their first argument; 8x the
    limit in all) before it runs as plain Python (with a one-time warning).

    Results are the same as plain PyTorch's: what cannot be captured runs
    as normal Python. Raises RuntimeError on Pythons other than 3.11/3.12.
    """
    _check_supported()
    if fn_or_module is None:
        return functools.partial(compile, backend=backend, mode=mode, dynamic=dynamic,
                                 fullgraph=fullgraph, cache_size_limit=cache_size_limit)
    if dynamic not in (None, True, False):
        raise ValueError("ptc.compile: dynamic must be None, True or False")
    config = Config(_resolve_backend(backend), mode, dynamic, fullgraph, cache_size_limit)
    try:
        is_module = isinstance(fn_or_module, _module_base())
    except ImportError:
        is_module = False
    if is_module:
        return _optimized_module_class()(fn_or_module, config)
    if not callable(fn_or_module):
        raise TypeError("ptc.compile: expected a function or an nn.Module, got %s"
                        % type(fn_or_module).__name__)
    return _wrap_function(fn_or_module, config)


def disable(fn=None):
    """Runs `fn` with capture off (also as a decorator: `@ptc.disable`).
    Calls made inside it are never captured, even from compiled code."""
    if fn is None:
        return disable
    if not callable(fn):
        raise TypeError("ptc.disable: expected a callable, got %s" % type(fn).__name__)

    @functools.wraps(fn)
    def ptc_disabled(*args, **kwargs):
        if not hasattr(_C, "dyn_run"):
            return fn(*args, **kwargs)
        return _C.dyn_run(None, fn, *args, **kwargs)

    ptc_disabled._ptc_disable = True
    return ptc_disabled


def reset():
    """Drops every compiled cache entry (and skip marks) of ptc.compile and
    zeroes compile_stats(); compiled callables recompile on their next call."""
    if hasattr(_C, "dyn_reset"):
        _C.dyn_reset()


def compile_stats():
    """Counters of the capture since the last reset(): frames_seen (frames
    the hook looked up), frames_converted, entries (cache entries made),
    graphs (entries that run a compiled graph; an entry may have none, e.g.
    a break before any tensor op), breaks (entries ending in a graph break), cache_hits, recompiles, skipped (conversions that
    chose plain Python), cache_limit_hits, errors (internal, ran plainly),
    fallbacks, threads_enabled."""
    if not hasattr(_C, "dyn_stats"):
        return {}
    return _C.dyn_stats()


class CaptureExplanation:
    """What ptc.compile captured from one call (ptc.explain on a plain
    callable). graphs: list of graph code strings; graph_count; op_count
    (tensor ops captured); break_reasons: list of (reason, "file:line");
    guards: list of str (of every cache entry made); infos: the raw info
    dicts; result: the call's return value; stats: compile_stats() delta.
    str(e) is a readable report."""

    def __init__(self):
        self.graphs = []
        self.break_reasons = []
        self.guards = []
        self.op_count = 0
        self.infos = []
        self.result = None
        self.stats = {}

    @property
    def graph_count(self):
        return len(self.graphs)

    @property
    def break_count(self):
        return len(self.break_reasons)

    def __repr__(self):
        return "<ptc.CaptureExplanation graphs=%d breaks=%d ops=%d guards=%d>" % (
            self.graph_count, self.break_count, self.op_count, len(self.guards))

    def __str__(self):
        out = ["== ptc.explain (bytecode capture): %d graph(s), %d break(s), %d op(s) =="
               % (self.graph_count, self.break_count, self.op_count)]
        for i, g in enumerate(self.graphs):
            out.append("-- graph %d --" % i)
            out.append(str(g).strip("\n"))
        out.append("-- graph breaks (%d) --" % self.break_count)
        out.extend("%s: %s" % (where, why) for why, where in self.break_reasons)
        if not self.break_reasons:
            out.append("(none)")
        out.append("-- guards (%d) --" % len(self.guards))
        out.extend(self.guards if self.guards else ["(none)"])
        return "\n".join(out)


def _info_reason(info):
    """(reason, "file:line") of a break info dict, or None."""
    why = info.get("break_reason") or info.get("reason")
    if not why:
        return None
    where = info.get("break_loc") or info.get("where") or info.get("loc")
    if not where:
        f, line = info.get("filename") or info.get("file"), info.get("line")
        where = "%s:%s" % (f, line) if f is not None else "?"
    return (str(why), str(where))


def _code_objects(fn):
    """Code objects whose cache entries explain should list (best effort)."""
    import types
    seen = []
    target = getattr(fn, "forward", fn) if not isinstance(fn, types.FunctionType) else fn
    code = getattr(getattr(target, "__func__", target), "__code__", None)
    if code is not None:
        seen.append(code)
    return seen


def explain(fn, *args, backend="cpu", mode=None, dynamic=None, **kwargs):
    """Compiles and runs fn(*args, **kwargs) once under capture (after
    reset(): every cache is dropped) and reports the graphs, graph breaks (reason and
    file:line), guards and op counts. Returns a CaptureExplanation (its
    `result` is the call's return value)."""
    _check_supported()
    config = Config(_resolve_backend(backend), mode, dynamic, False)
    target = getattr(fn, "_ptc_orig", None) or fn  # a ptc.compile wrapper: its function
    if type(target).__name__ == "OptimizedModule" and hasattr(target, "_orig_mod"):
        target = target._orig_mod
    reset()  # fresh caches: every graph of this call is converted (and logged) now
    before = compile_stats()
    rep = CaptureExplanation()
    rep.result = _run_with(config, target, args, kwargs)
    after = compile_stats()
    rep.stats = {k: after.get(k, 0) - before.get(k, 0) for k in after
                 if isinstance(after.get(k), int)}
    for info in config.graphs_log:
        if not isinstance(info, dict):
            continue
        rep.infos.append(info)
        g = info.get("graph")
        if g is not None and info.get("kind") != "skip":
            rep.graphs.append(g)
        rep.op_count += int(info.get("ops", 0) or 0)
        br = _info_reason(info)
        if br is not None:
            rep.break_reasons.append(br)
        for gd in info.get("guards", ()) or ():
            rep.guards.append(str(gd))
    if not rep.guards:
        for code in _code_objects(target):
            for e in _C.dyn_entries(code):
                rep.guards.extend(e.get("guards", ()))
    return rep


_cls = _unsupported_class()
if _cls is not None:
    Unsupported = _cls  # noqa: F811 - the class the C side raises
del _cls
