"""cases_shape.py - PyTorch reference cases for the shape family: views and
reshapes, copies, cat/stack/split/chunk, gather/scatter/index ops, tril/triu.

Inputs include non-contiguous tensors (x.t(), x[:, ::2], permuted tensors)
and broadcast ones (x.expand(...), stride 0); the data-movement ops run over
every dtype (bool and f16 included). as_strided inputs have storage offset 0
because libptc's storage_offset is relative to the input's first element.
"""
import torch
from casegen import A

ALL = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int8,
       torch.int16, torch.int32, torch.int64, torch.uint8, torch.bool]
SHORT = {torch.float32: "f32", torch.float64: "f64", torch.float16: "f16",
         torch.bfloat16: "bf16", torch.int8: "i8", torch.int16: "i16", torch.int32: "i32",
         torch.int64: "i64", torch.uint8: "u8", torch.bool: "bool"}


def mk(shape, dt=torch.float32):
    if dt.is_floating_point:
        return torch.randn(shape).to(dt)
    if dt == torch.bool:
        return torch.randint(0, 2, shape).bool()
    if dt == torch.uint8:
        return torch.randint(0, 250, shape).to(dt)
    return torch.randint(-100, 100, shape).to(dt)


def layouts(dt=torch.float32):
    """(tag, tensor) pairs of one dtype in several memory layouts, shape [4, 6]
    except where noted."""
    return [
        ("contig", mk([4, 6], dt)),
        ("t", mk([6, 4], dt).t()),
        ("step2", mk([4, 12], dt)[:, ::2]),
        ("expand", mk([4, 1], dt).expand(4, 6)),
        ("off", mk([5, 7], dt)[1:, 1:]),
    ]


def shape_views(C):
    for dt in ALL:
        s = SHORT[dt]
        for tag, x in layouts(dt):
            C.add("reshape_%s_%s" % (s, tag), "reshape", [x], x.reshape(3, 8),
                  attrs={"shape": A.ints([3, 8])})
            C.add("contiguous_%s_%s" % (s, tag), "contiguous", [x], x.contiguous())
            C.add("clone_%s_%s" % (s, tag), "clone", [x], x.clone())
            C.add("permute_%s_%s" % (s, tag), "permute", [x], x.permute(1, 0),
                  attrs={"dims": A.ints([1, 0])})
        x = mk([2, 3, 4], dt)
        C.add("view_%s" % s, "view", [x], x.view(4, -1), attrs={"size": A.ints([4, -1])})
        C.add("transpose_%s" % s, "transpose", [x], x.transpose(0, 2),
              attrs={"dim0": A.int(0), "dim1": A.int(2)})
        C.add("expand_%s" % s, "expand", [x[:, :1]], x[:, :1].expand(2, 3, 4),
              attrs={"size": A.ints([2, 3, -1])})
        C.add("flatten_%s" % s, "flatten", [x], x.flatten())
        C.add("squeeze_%s" % s, "squeeze", [x[:, :1]], x[:, :1].squeeze())
        C.add("unsqueeze_%s" % s, "unsqueeze", [x], x.unsqueeze(1), attrs={"dim": A.int(1)})
        C.add("slice_%s" % s, "slice", [x], x[:, 1::2],
              attrs={"dim": A.int(1), "start": A.int(1), "step": A.int(2)})
        C.add("select_%s" % s, "select", [x], x.select(2, -1),
              attrs={"dim": A.int(2), "index": A.int(-1)})
        C.add("narrow_%s" % s, "narrow", [x], x.narrow(-1, 1, 2),
              attrs={"dim": A.int(-1), "start": A.int(1), "length": A.int(2)})
        C.add("unflatten_%s" % s, "unflatten", [x], x.unflatten(2, (2, 2)),
              attrs={"dim": A.int(2), "sizes": A.ints([2, 2])})
        C.add("tril_%s" % s, "tril", [x], x.tril(), attrs={})
        C.add("triu_%s" % s, "triu", [x], x.triu(1), attrs={"diagonal": A.int(1)})
        base = mk([20], dt)
        C.add("as_strided_%s" % s, "as_strided", [base], base.as_strided([3, 4], [5, 1], 2),
              attrs={"size": A.ints([3, 4]), "stride": A.ints([5, 1]),
                     "storage_offset": A.int(2)})


def views_detail(C):
    x = mk([2, 3, 4])
    for name, size in [("2x12", [2, 12]), ("m1", [-1]), ("24x1", [24, 1]),
                       ("mid", [2, -1, 2]), ("4x3x2", [4, 3, 2]), ("1x2x1x12", [1, 2, 1, 12])]:
        C.add("view_shape_" + name, "view", [x], x.view(size), attrs={"size": A.ints(size)})
    t = mk([6, 4]).t()  # [4, 6], strides (1, 4)
    C.add("view_t_split", "view", [t], t.view(2, 2, 6), attrs={"size": A.ints([2, 2, 6])})
    C.add("view_t_unsq", "view", [t], t.view(4, 1, 6), attrs={"size": A.ints([4, 1, 6])})
    e = mk([3, 1]).expand(3, 4)
    C.add("view_expand", "view", [e], e.view(3, 2, 2), attrs={"size": A.ints([3, 2, 2])})
    s0 = torch.tensor(2.5)
    C.add("view_scalar_to_1", "view", [s0], s0.view(1), attrs={"size": A.ints([1])})
    one = mk([1, 1])
    C.add("view_to_scalar", "view", [one], one.view([]), attrs={"size": A.ints([])})
    z = mk([0, 3])
    C.add("view_empty", "view", [z], z.view(3, 0, 1), attrs={"size": A.ints([3, 0, 1])})
    # reshape: view when possible, else copy
    p = mk([2, 3, 4]).permute(2, 0, 1)
    C.add("reshape_perm_flat", "reshape", [p], p.reshape(-1), attrs={"shape": A.ints([-1])})
    C.add("reshape_perm_split", "reshape", [p], p.reshape(2, 2, 6),
          attrs={"shape": A.ints([2, 2, 6])})
    C.add("reshape_size_attr", "reshape", [x], x.reshape(6, 4), attrs={"size": A.ints([6, 4])})
    C.add("reshape_scalar", "reshape", [s0], s0.reshape(1, 1), attrs={"shape": A.ints([1, 1])})
    # flatten
    y = mk([2, 3, 4, 5])
    for sd, ed in [(0, -1), (1, 2), (-3, -2), (2, 2), (0, 0), (1, -1)]:
        C.add("flatten_%d_%d" % (sd, ed), "flatten", [y], y.flatten(sd, ed),
              attrs={"start_dim": A.int(sd), "end_dim": A.int(ed)})
    yt = y.transpose(1, 3)
    C.add("flatten_noncontig", "flatten", [yt], yt.flatten(1),
          attrs={"start_dim": A.int(1)})
    C.add("flatten_scalar", "flatten", [s0], s0.flatten())
    # unflatten
    for d, sizes in [(0, [1, 2]), (1, [3, 1]), (-1, [5, -1]), (2, [2, -1]), (3, [-1, 5, 1])]:
        C.add(("unflatten_%d_%s" % (d, "_".join(str(v) for v in sizes))).replace("-", "m"),
              "unflatten", [y], y.unflatten(d, sizes),
              attrs={"dim": A.int(d), "sizes": A.ints(sizes)})
    C.add("unflatten_noncontig", "unflatten", [yt], yt.unflatten(1, (5, 1)),
          attrs={"dim": A.int(1), "sizes": A.ints([5, 1])})
    # permute / transpose
    for dims in [[2, 0, 1], [0, 2, 1], [-1, -2, -3], [1, 0, 2]]:
        C.add("permute_3d_" + "_".join(str(d) for d in dims).replace("-", "m"), "permute",
              [x], x.permute(*dims), attrs={"dims": A.ints(dims)})
    C.add("permute_noncontig", "permute", [p], p.permute(1, 2, 0), attrs={"dims": A.ints([1, 2, 0])})
    C.add("permute_scalar", "permute", [s0], s0.permute([]), attrs={"dims": A.ints([])})
    for a, b in [(0, 1), (-1, -3), (1, 1), (2, -2)]:
        C.add("transpose_%d_%d" % (a, b), "transpose", [y], y.transpose(a, b),
              attrs={"dim0": A.int(a), "dim1": A.int(b)})
    C.add("transpose_noncontig", "transpose", [t], t.transpose(0, 1),
          attrs={"dim0": A.int(0), "dim1": A.int(1)})
    C.add("transpose_scalar", "transpose", [s0], s0.transpose(0, -1),
          attrs={"dim0": A.int(0), "dim1": A.int(-1)})
    # expand
    v = mk([3, 1])
    for size in [[3, 4], [2, 3, 5], [-1, 2], [1, 3, 1], [2, -1, -1]]:
        C.add("expand_" + "_".join(str(d) for d in size).replace("-", "m"), "expand", [v],
              v.expand(*size), attrs={"size": A.ints(size)})
    C.add("expand_scalar", "expand", [s0], s0.expand(2, 3), attrs={"size": A.ints([2, 3])})
    C.add("expand_of_expand", "expand", [e], e.expand(2, 3, 4), attrs={"size": A.ints([2, 3, 4])})
    C.add("expand_noncontig", "expand", [t[:, :1]], t[:, :1].expand(4, 5),
          attrs={"size": A.ints([4, 5])})
    # squeeze / unsqueeze
    q = mk([1, 3, 1, 2])
    C.add("squeeze_all", "squeeze", [q], q.squeeze())
    for d in [0, 2, -2, 1]:
        C.add("squeeze_dim_%d" % d, "squeeze", [q], q.squeeze(d), attrs={"dim": A.ints([d])})
    C.add("squeeze_dims_0_m2", "squeeze", [q], q.squeeze(2).squeeze(0),
          attrs={"dim": A.ints([0, -2])})
    C.add("squeeze_dims_1_2", "squeeze", [q], q.squeeze(2),
          attrs={"dim": A.ints([1, 2])})
    C.add("squeeze_scalar", "squeeze", [s0], s0.squeeze())
    qt = mk([2, 1, 3]).transpose(0, 2)
    C.add("squeeze_noncontig", "squeeze", [qt], qt.squeeze(1), attrs={"dim": A.ints([1])})
    for d in [0, 1, 3, -1, -4]:
        C.add("unsqueeze_%d" % d, "unsqueeze", [x], x.unsqueeze(d), attrs={"dim": A.int(d)})
    C.add("unsqueeze_scalar", "unsqueeze", [s0], s0.unsqueeze(0), attrs={"dim": A.int(0)})
    C.add("unsqueeze_noncontig", "unsqueeze", [t], t.unsqueeze(1), attrs={"dim": A.int(1)})


def slicing(C):
    x = mk([5, 8])
    cases = [  # (dim, start, end, step)
        (0, 1, 4, 1), (1, 0, None, 2), (1, 1, None, 3), (-1, -3, None, 1), (0, -10, 2, 1),
        (1, 2, 100, 2), (1, 6, 2, 1), (0, None, -1, 2), (1, -100, -5, 1), (0, 5, None, 1),
        (1, 3, 2 ** 40, 4), (1, -2 ** 40, 3, 1),
    ]
    for dim, start, end, step in cases:
        attrs = {"dim": A.int(dim), "step": A.int(step)}
        if start is not None:
            attrs["start"] = A.int(start)
        if end is not None:
            attrs["end"] = A.int(end)
        sl = slice(start, end, step)
        want = x[sl] if dim == 0 else x[:, sl]
        name = "slice_%s_%s_%s_%s" % (dim, start, end, step)
        C.add(name.replace("-", "m"), "slice", [x], want, attrs=attrs)
    t = mk([8, 5]).t()
    C.add("slice_noncontig", "slice", [t], t[:, 1:7:2],
          attrs={"dim": A.int(1), "start": A.int(1), "end": A.int(7), "step": A.int(2)})
    ex = mk([5, 1]).expand(5, 4)
    C.add("slice_expand", "slice", [ex], ex[1:4], attrs={"start": A.int(1), "end": A.int(4)})
    y = mk([3, 4, 5])
    for dim, idx in [(0, 0), (1, -1), (2, 3), (-1, -5), (-3, 2)]:
        C.add(("select_%d_%d" % (dim, idx)).replace("-", "m"), "select", [y],
              y.select(dim, idx), attrs={"dim": A.int(dim), "index": A.int(idx)})
    C.add("select_noncontig", "select", [t], t.select(1, 3),
          attrs={"dim": A.int(1), "index": A.int(3)})
    C.add("select_1d", "select", [x[0]], x[0].select(0, 2),
          attrs={"dim": A.int(0), "index": A.int(2)})
    for dim, start, length in [(0, 0, 2), (1, 1, 3), (-1, -3, 2), (2, 5, 0), (1, -4, 4)]:
        C.add(("narrow_%d_%d_%d" % (dim, start, length)).replace("-", "m"), "narrow", [y],
              y.narrow(dim, start, length),
              attrs={"dim": A.int(dim), "start": A.int(start), "length": A.int(length)})
    C.add("narrow_noncontig", "narrow", [t], t.narrow(0, 1, 3),
          attrs={"dim": A.int(0), "start": A.int(1), "length": A.int(3)})
    b = mk([24])
    for size, stride, off in [([4, 4], [1, 1], 0), ([2, 3], [0, 1], 5), ([3, 2, 2], [8, 1, 4], 0),
                              ([24], [1], 0), ([], [], 7), ([2, 0], [1, 1], 23), ([5], [5], 3)]:
        C.add("as_strided_%s_%s_%d" % ("x".join(map(str, size)) or "s",
                                       "x".join(map(str, stride)) or "s", off),
              "as_strided", [b], b.as_strided(size, stride, off),
              attrs={"size": A.ints(size), "stride": A.ints(stride),
                     "storage_offset": A.int(off)})
    b2 = mk([4, 6])
    C.add("as_strided_2d_input", "as_strided", [b2], b2.as_strided([3, 3], [7, 1]),
          attrs={"size": A.ints([3, 3]), "stride": A.ints([7, 1])})


def joining(C):
    a, b, c = mk([2, 3]), mk([4, 3]), mk([1, 3])
    C.add("cat_dim0", "cat", [a, b, c], torch.cat([a, b, c]))
    C.add("cat_single", "cat", [a], torch.cat([a]))
    d, e = mk([2, 5]), mk([2, 1])
    C.add("cat_dim1", "cat", [a, d, e], torch.cat([a, d, e], 1), attrs={"dim": A.int(1)})
    C.add("cat_dim_m1", "cat", [a, d], torch.cat([a, d], -1), attrs={"dim": A.int(-1)})
    at, bt = mk([3, 2]).t(), mk([2, 6])[:, ::2]
    C.add("cat_noncontig", "cat", [at, bt, a], torch.cat([at, bt, a]))
    ex = mk([1, 3]).expand(3, 3)
    C.add("cat_expand", "cat", [ex, a], torch.cat([ex, a]))
    empty = torch.zeros(0)
    C.add("cat_legacy_empty", "cat", [empty, a, empty, b], torch.cat([empty, a, empty, b]))
    C.add("cat_all_empty", "cat", [empty, empty], torch.cat([empty, empty]))
    z = mk([0, 3])
    C.add("cat_zero_rows", "cat", [a, z], torch.cat([a, z]))
    x3 = mk([2, 3, 4])
    C.add("cat_3d_dim1", "cat", [x3, x3[:, :1]], torch.cat([x3, x3[:, :1]], 1),
          attrs={"dim": A.int(1)})
    for dt in ALL:
        p, q = mk([2, 3], dt), mk([3, 3], dt)
        C.add("cat_%s" % SHORT[dt], "cat", [p, q], torch.cat([p, q]))
        C.add("stack_%s" % SHORT[dt], "stack", [p, p], torch.stack([p, p], 1),
              attrs={"dim": A.int(1)})
    for da, db in [(torch.int32, torch.float16), (torch.bool, torch.int8),
                   (torch.uint8, torch.int8), (torch.float16, torch.bfloat16),
                   (torch.int64, torch.float64), (torch.bool, torch.float32)]:
        p, q = mk([2, 3], da), mk([1, 3], db)
        name = "%s_%s" % (SHORT[da], SHORT[db])
        C.add("cat_promote_" + name, "cat", [p, q], torch.cat([p, q]))
        q2 = mk([2, 3], db)
        C.add("stack_promote_" + name, "stack", [p, q2], torch.stack([p, q2]))
    pi = mk([2, 3], torch.int32)
    C.add("cat_promote_empty", "cat", [pi, torch.zeros(0)], torch.cat([pi, torch.zeros(0)]))
    for dim in [0, 1, 2, -1, -3]:
        C.add(("stack_dim_%d" % dim).replace("-", "m"), "stack", [a, a * 2, a.t().t()],
              torch.stack([a, a * 2, a], dim), attrs={"dim": A.int(dim)})
    s = torch.tensor(1.5)
    C.add("stack_scalars", "stack", [s, s * 2], torch.stack([s, s * 2]))
    C.add("stack_noncontig", "stack", [at, bt], torch.stack([at, bt], -1),
          attrs={"dim": A.int(-1)})


def splitting(C):
    x = mk([7, 4])
    for ss, dim in [(2, 0), (3, 0), (7, 0), (10, 0), (1, 1), (3, -1)]:
        C.add("split_size_%d_%d" % (ss, dim), "split", [x], x.split(ss, dim),
              attrs={"split_size": A.int(ss), "dim": A.int(dim)})
    for sizes, dim in [([2, 5], 0), ([1, 0, 6], 0), ([4], 1), ([1, 2, 1], -1)]:
        C.add("split_sizes_%s_%d" % ("_".join(map(str, sizes)), dim), "split", [x],
              x.split(sizes, dim), attrs={"split_sizes": A.ints(sizes), "dim": A.int(dim)})
    t = mk([4, 7]).t()
    C.add("split_noncontig", "split", [t], t.split(3), attrs={"split_size": A.int(3)})
    z = mk([0, 3])
    C.add("split_empty", "split", [z], z.split(0), attrs={"split_size": A.int(0)})
    for chunks, dim in [(3, 0), (4, 0), (7, 0), (9, 0), (2, 1), (3, -1)]:
        C.add(("chunk_%d_%d" % (chunks, dim)).replace("-", "m"), "chunk", [x],
              x.chunk(chunks, dim), attrs={"chunks": A.int(chunks), "dim": A.int(dim)})
    y = mk([6, 3])
    C.add("chunk_even", "chunk", [y], y.chunk(4), attrs={"chunks": A.int(4)})
    C.add("chunk_empty", "chunk", [z], z.chunk(3), attrs={"chunks": A.int(3)})
    for dt in [torch.bool, torch.float16, torch.int64]:
        v = mk([5, 2], dt)
        C.add("split_%s" % SHORT[dt], "split", [v], v.split(2), attrs={"split_size": A.int(2)})
        C.add("chunk_%s" % SHORT[dt], "chunk", [v], v.chunk(2), attrs={"chunks": A.int(2)})


def unique_index(xshape, ishape, dim):
    """Index of shape ishape whose values along dim are distinct (no write races)."""
    perm = torch.rand(xshape).argsort(dim)
    return perm[tuple(slice(0, n) for n in ishape)]


def indexing(C):
    x = mk([4, 5])
    for dim, ishape in [(0, [3, 5]), (1, [4, 2]), (-1, [2, 3]), (0, [2, 1])]:
        idx = torch.randint(0, x.shape[dim], ishape)
        C.add(("gather_%d_%s" % (dim, "x".join(map(str, ishape)))).replace("-", "m"), "gather",
              [x, idx], x.gather(dim, idx), attrs={"dim": A.int(dim)})
    t = mk([5, 4]).t()
    idx = torch.randint(0, 5, [4, 3])
    C.add("gather_noncontig", "gather", [t, idx.t().t()], t.gather(1, idx), attrs={"dim": A.int(1)})
    C.add("gather_index_expand", "gather", [x, torch.tensor([[3, 0, 1, 2, 2]]).expand(3, 5)],
          x.gather(0, torch.tensor([[3, 0, 1, 2, 2]]).expand(3, 5)), attrs={"dim": A.int(0)})
    x3 = mk([2, 3, 4])
    idx3 = torch.randint(0, 3, [2, 2, 4])
    C.add("gather_3d", "gather", [x3, idx3], x3.gather(1, idx3), attrs={"dim": A.int(1)})
    # scatter with src / value, scatter_add
    for dim, ishape in [(0, [3, 5]), (1, [4, 2]), (-1, [2, 5])]:
        idx = unique_index([4, 5], ishape, dim)
        src = mk([4, 5])
        nm = ("%d_%s" % (dim, "x".join(map(str, ishape)))).replace("-", "m")
        C.add("scatter_src_" + nm, "scatter", [x, idx, src], x.scatter(dim, idx, src),
              attrs={"dim": A.int(dim)})
        C.add("scatter_value_" + nm, "scatter", [x, idx, None], x.scatter(dim, idx, -2.5),
              attrs={"dim": A.int(dim), "value": A.float(-2.5)})
        dup = torch.randint(0, x.shape[dim], ishape)
        C.add("scatter_add_" + nm, "scatter_add", [x, dup, src], x.scatter_add(dim, dup, src),
              attrs={"dim": A.int(dim)})
    xi = mk([4, 5], torch.int32)
    idx = unique_index([4, 5], [2, 5], 0)
    C.add("scatter_value_int", "scatter", [xi, idx, None], xi.scatter(0, idx, 7),
          attrs={"dim": A.int(0), "value": A.int(7)})
    dup = torch.randint(0, 4, [6, 5])
    srci = mk([6, 5], torch.int32)
    C.add("scatter_add_int", "scatter_add", [xi, dup, srci], xi.scatter_add(0, dup, srci),
          attrs={"dim": A.int(0)})
    xh = mk([4, 5], torch.float16)
    srch = mk([6, 5], torch.float16)
    C.add("scatter_add_f16", "scatter_add", [xh, dup, srch], xh.scatter_add(0, dup, srch),
          attrs={"dim": A.int(0)})
    xb = mk([4, 5], torch.bool)
    srcb = mk([4, 5], torch.bool)
    idx = unique_index([4, 5], [4, 5], 1)
    C.add("scatter_src_bool", "scatter", [xb, idx, srcb], xb.scatter(1, idx, srcb),
          attrs={"dim": A.int(1)})
    idx = unique_index([4, 5], [4, 3], 1)
    C.add("scatter_noncontig", "scatter", [t, idx, t[:, ::2]], t.scatter(1, idx, t[:, ::2]),
          attrs={"dim": A.int(1)})
    # index_select
    for dim, n in [(0, 3), (1, 7), (-1, 1), (0, 0)]:
        idx = torch.randint(0, x.shape[dim], [n])
        C.add(("index_select_%d_%d" % (dim, n)).replace("-", "m"), "index_select", [x, idx],
              x.index_select(dim, idx), attrs={"dim": A.int(dim)})
    idx32 = torch.tensor([2, 0, 2], dtype=torch.int32)
    C.add("index_select_idx_i32", "index_select", [t, idx32], t.index_select(1, idx32),
          attrs={"dim": A.int(1)})
    s = torch.tensor(3.0)
    C.add("index_select_scalar", "index_select", [s, torch.tensor([0])],
          s.index_select(0, torch.tensor([0])), attrs={"dim": A.int(0)})
    C.add("index_select_scalar_index", "index_select", [x, torch.tensor(2)],
          x.index_select(1, torch.tensor(2)), attrs={"dim": A.int(1)})
    for dt in ALL:
        v = mk([3, 4], dt)
        i0 = torch.tensor([2, 0, 2, 1])
        C.add("index_select_%s" % SHORT[dt], "index_select", [v, i0], v.index_select(0, i0),
              attrs={"dim": A.int(0)})
        g = torch.randint(0, 3, [2, 4])
        C.add("gather_%s" % SHORT[dt], "gather", [v, g], v.gather(0, g), attrs={"dim": A.int(0)})
        C.add("index_%s" % SHORT[dt], "index", [v, None, torch.tensor([3, -1, 0])],
              v[:, torch.tensor([3, -1, 0])])
    # advanced indexing
    y = mk([3, 4, 5])
    i1 = torch.tensor([2, 0, -1])
    i2 = torch.tensor([[1], [3]])
    i3 = torch.tensor([4, 0, 2])
    C.add("index_first", "index", [y, i1], y[i1])
    C.add("index_second", "index", [y, None, i2], y[:, i2])
    C.add("index_last", "index", [y, None, None, i3], y[:, :, i3])
    C.add("index_adjacent", "index", [y, i1, i2], y[i1, i2])
    C.add("index_adjacent_mid", "index", [y, None, i2, i3], y[:, i2, i3])
    C.add("index_gap", "index", [y, i1, None, i3], y[i1, :, i3])
    C.add("index_all3", "index", [y, i1, torch.tensor([0]), i3], y[i1, torch.tensor([0]), i3])
    C.add("index_scalar_index", "index", [y, None, torch.tensor(-2)], y[:, torch.tensor(-2)])
    C.add("index_idx_i32", "index", [y, torch.tensor([1, 0], dtype=torch.int32)],
          y[torch.tensor([1, 0])])
    C.add("index_empty", "index", [y, torch.zeros(0, dtype=torch.long)],
          y[torch.zeros(0, dtype=torch.long)])
    yt = y.transpose(0, 2)
    C.add("index_noncontig", "index", [yt, None, i1], yt[:, i1])
    C.add("index_expanded_index", "index", [y, i1.expand(2, 3), None, i3],
          y[i1.expand(2, 3), :, i3])


def triangles(C):
    x = mk([4, 6])
    for k in [-5, -1, 0, 1, 2, 7]:
        nm = ("%d" % k).replace("-", "m")
        C.add("tril_%s" % nm, "tril", [x], x.tril(k), attrs={"diagonal": A.int(k)})
        C.add("triu_%s" % nm, "triu", [x], x.triu(k), attrs={"diagonal": A.int(k)})
    b = mk([2, 5, 3])
    C.add("tril_batch", "tril", [b], b.tril(-1), attrs={"diagonal": A.int(-1)})
    C.add("triu_batch", "triu", [b], b.triu())
    t = mk([6, 4]).t()
    C.add("tril_noncontig", "tril", [t], t.tril(1), attrs={"diagonal": A.int(1)})
    ex = mk([1, 5]).expand(4, 5)
    C.add("triu_expand", "triu", [ex], ex.triu())


def cases(C):
    shape_views(C)
    views_detail(C)
    slicing(C)
    joining(C)
    splitting(C)
    indexing(C)
    triangles(C)
