"""ptc._dynamic - mark_dynamic: ask CompiledFunction to compile a dim symbolic."""


def mark_dynamic(t, dim):
    """Marks dimension `dim` (an int or a list of ints; negative counts from
    the end) of tensor `t` dynamic for the next compile of a CompiledFunction
    that receives it. Stored as the set `t._ptc_dynamic_dims`. Returns `t`.
    Raises IndexError for a dim outside the tensor's rank."""
    dims = [dim] if isinstance(dim, int) else list(dim)
    rank = t.dim()
    marked = set(getattr(t, "_ptc_dynamic_dims", ()))
    for d in dims:
        if not isinstance(d, int) or isinstance(d, bool):
            raise TypeError(f"mark_dynamic: dim must be an int, not {type(d).__name__}")
        if not -rank <= d < rank:
            raise IndexError(f"mark_dynamic: dim {d} out of range for a rank-{rank} tensor")
        marked.add(d % rank)
    t._ptc_dynamic_dims = marked
    return t
