"""ptc/explain.py - `ptc.explain`: what ptc does with a model or function.

    report = ptc.explain(model, x)            # prints, and returns an Explanation
    report.num_kernels, report.kernels, report.debug_dir

Traces (torch.fx.symbolic_trace) unless given a GraphModule, compiles
through `ptc.from_fx` with a debug folder, runs once on the inputs so the
executable exists, and reports: the ptc graph (Graph.format()), the kernels
after fusion with the graph nodes each fuses and the extern calls
(Executable.format(), which also names the generated sources), the kernel
count, the shape guards, and the files libptc wrote into the debug folder
(graph, decomposed graph, IR, schedule with every fusion decision, kernel
sources). Unsupported targets are reported, not raised.
"""

import os
import tempfile

__all__ = ["explain", "Explanation"]


class Explanation:
    """The report of one `ptc.explain` call. Fields:

    backend (str); graph (str: the ptc graph, or "" when it could not be
    built); kernels (str: Executable.format(), "" when not compiled);
    num_kernels (int: compiled kernels plus extern calls, 0 when not
    compiled); num_nodes (int: ptc graph nodes); guards (list[str]: shape
    guards of the ptc graph); debug_dir (str: where libptc dumped its
    stages); files (list[str]: paths relative to debug_dir); unsupported
    (str | None: the UnsupportedError message when the model uses targets
    ptc lacks); compiled (the ptc.from_fx result, or None).
    str(e) is the printed report.
    """

    def __init__(self, backend, debug_dir):
        self.backend = backend
        self.debug_dir = debug_dir
        self.graph = ""
        self.kernels = ""
        self.num_kernels = 0
        self.num_nodes = 0
        self.guards = []
        self.files = []
        self.unsupported = None
        self.compiled = None

    def __repr__(self):
        return "<ptc.Explanation backend=%r kernels=%d nodes=%d unsupported=%s>" % (
            self.backend, self.num_kernels, self.num_nodes, self.unsupported is not None)

    def __str__(self):
        out = ["== ptc.explain: backend %s ==" % self.backend]
        if self.unsupported is not None:
            out.append("unsupported (the torch.compile backend would run this eagerly):")
            out.append(self.unsupported)
        if self.graph:
            out.append("-- ptc graph (%d nodes) --" % self.num_nodes)
            out.append(self.graph.rstrip("\n"))
        if self.kernels:
            out.append("-- kernels after fusion (%d) --" % self.num_kernels)
            out.append(self.kernels.rstrip("\n"))
        out.append("-- guards (%d) --" % len(self.guards))
        out.extend(self.guards if self.guards else ["(none: every size is static)"])
        out.append("-- debug dir: %s --" % self.debug_dir)
        out.extend(self.files if self.files else ["(empty)"])
        return "\n".join(out)


def _list_files(root):
    found = []
    for dirpath, _dirs, files in os.walk(root):
        for f in files:
            found.append(os.path.relpath(os.path.join(dirpath, f), root))
    return sorted(found)


def _to_graph_module(obj):
    import torch
    import torch.fx

    if isinstance(obj, torch.fx.GraphModule):
        return obj
    if isinstance(obj, torch.nn.Module) or callable(obj):
        return torch.fx.symbolic_trace(obj)
    raise TypeError("ptc.explain: expected a torch.fx.GraphModule, an nn.Module or a "
                    "function, got %s" % type(obj).__name__)


def _use_capture(obj, debug_dir, verbose):
    """Whether ptc.explain goes to the bytecode capture's explain
    (ptc.dynamo.explain): any callable that is not a torch.fx.GraphModule,
    unless the FX-only options debug_dir/verbose are given."""
    if debug_dir is not None or verbose is not None or not callable(obj):
        return False
    import torch.fx
    return not isinstance(obj, torch.fx.GraphModule)


def explain(gm_or_fn, *inputs, backend="cpu", mode=None, debug_dir=None, verbose=None, **kwargs):
    """Compiles `gm_or_fn` for `inputs` and reports what ptc made of it.

    gm_or_fn: a torch.fx.GraphModule, an nn.Module or a function (the latter
    two are traced with torch.fx.symbolic_trace). inputs: the tensors to
    compile and run for. backend/mode: as ptc.from_fx. debug_dir: folder for
    libptc's dumps; None makes a new temporary folder that is kept (its path
    is in the report). verbose: print the report (default True).

    Dispatch: a GraphModule, or a call with debug_dir/verbose, gets this
    FX report; any other callable goes to the bytecode capture's explain
    (ptc.dynamo.explain: graphs, graph breaks, guards; extra keyword
    arguments are passed to the callable).

    Returns an Explanation. Raises TypeError for a non-callable, the tracer's
    errors for code symbolic_trace cannot follow, and ptc.Error when libptc
    rejects the graph or the inputs; unsupported targets are reported in
    `.unsupported` instead of raised. Not thread-safe with respect to
    printing only.
    """
    if _use_capture(gm_or_fn, debug_dir, verbose):
        from .dynamo import explain as capture_explain
        return capture_explain(gm_or_fn, *inputs, backend=backend, mode=mode, **kwargs)
    if kwargs:
        raise TypeError("ptc.explain: unexpected keyword arguments %s" % sorted(kwargs))
    verbose = True if verbose is None else verbose
    from .fx import UnsupportedError, from_fx

    gm = _to_graph_module(gm_or_fn)
    if debug_dir is None:
        debug_dir = tempfile.mkdtemp(prefix="ptc-explain-")
    else:
        os.makedirs(debug_dir, exist_ok=True)
    rep = Explanation(backend, debug_dir)
    try:
        cg = from_fx(gm, list(inputs), backend=backend, mode=mode, debug_dir=debug_dir)
    except UnsupportedError as e:
        rep.unsupported = str(e)
    else:
        rep.compiled = cg
        cg(*inputs)  # makes sure the executable for these inputs exists
        g = cg.graph
        rep.graph = g.format()
        rep.num_nodes = g.num_nodes
        rep.guards = list(g.guards())
        # The executable that serves these inputs (the cache may hold more).
        exe = next((e for e in cg.compiled.executables if e.accepts(list(inputs))), None)
        if exe is not None:
            rep.kernels = exe.format()
            rep.num_kernels = exe.num_kernels
    rep.files = _list_files(debug_dir)
    if verbose:
        print(rep)
    return rep


class _CallableModule(type(os)):
    """`import ptc.explain` rebinds the package attribute ptc.explain to
    this module: calling it still means the function."""

    def __call__(self, *args, **kwargs):
        return explain(*args, **kwargs)


import sys as _sys  # noqa: E402

_sys.modules[__name__].__class__ = _CallableModule
