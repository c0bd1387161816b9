"""casegen.py - shared machinery of the op test-case generator.

Family modules (cases_<family>.py) define `def cases(C)` and call
`C.add(...)` with torch tensors; this module serialises them into
tests/data/ops_<family>.json in the format read by tests/test_ops_torch.c:

  {"cases": [{"name", "op", "attrs": {name: {type: value}},
              "inputs": [ {dtype, shape, strides, storage} | null ],
              "outputs": [ {dtype, shape, data} ],
              "rtol", "atol", "check"} ]}

`storage` holds the elements of the smallest storage window covering the
tensor (so non-contiguous and broadcast inputs keep their strides);
`data` holds outputs in row-major order. NaN and infinities are the strings
"nan", "inf", "-inf". check is "values" (default), "shape" (shape/dtype only)
or "sorted_last" (compare after sorting the last dim; for ops whose order of
ties is unspecified).
"""
import json
import math
import torch

DTYPES = {
    torch.float32: "f32", torch.float64: "f64", torch.float16: "f16",
    torch.bfloat16: "bf16", torch.int8: "i8", torch.int16: "i16",
    torch.int32: "i32", torch.int64: "i64", torch.uint8: "u8", torch.bool: "bool",
}


def _num(x):
    if isinstance(x, bool):
        return int(x)
    if isinstance(x, float):
        if math.isnan(x):
            return "nan"
        if math.isinf(x):
            return "inf" if x > 0 else "-inf"
    return x


def _values(t):
    if t.dtype in (torch.float16, torch.bfloat16):
        t = t.float()
    if t.dtype == torch.bool:
        t = t.to(torch.uint8)
    return [_num(v) for v in t.reshape(-1).tolist()]


def tensor_input(t):
    """Serialise a (possibly strided / broadcast) tensor with its storage window."""
    if t is None:
        return None
    shape = list(t.shape)
    strides = list(t.stride())
    numel = t.numel()
    if numel == 0:
        extent = 0
    else:
        extent = 1 + sum((s - 1) * st for s, st in zip(shape, strides) if st > 0)
    offset = t.storage_offset()
    base = t.as_strided([extent], [1], offset) if extent > 0 else t.new_empty([0])
    return {"dtype": DTYPES[t.dtype], "shape": shape, "strides": strides,
            "storage": _values(base)}


def tensor_output(t):
    t = t.contiguous()
    return {"dtype": DTYPES[t.dtype], "shape": list(t.shape), "data": _values(t)}


class A:
    """Typed attribute constructors."""
    @staticmethod
    def int(v): return {"int": int(v)}
    @staticmethod
    def float(v): return {"float": _num(float(v))}
    @staticmethod
    def bool(v): return {"bool": bool(v)}
    @staticmethod
    def ints(v): return {"ints": [int(x) for x in v]}
    @staticmethod
    def floats(v): return {"floats": [_num(float(x)) for x in v]}
    @staticmethod
    def string(v): return {"string": str(v)}
    @staticmethod
    def dtype(d): return {"dtype": DTYPES[d] if isinstance(d, torch.dtype) else d}


def default_tol(dtype):
    return {
        torch.float16: (1e-2, 1e-2), torch.bfloat16: (2e-2, 2e-2),
        torch.float32: (1e-4, 1e-5), torch.float64: (1e-9, 1e-10),
    }.get(dtype, (0.0, 0.0))


class Collector:
    def __init__(self):
        self.cases = []
        self.names = set()

    def add(self, name, op, inputs, outputs, attrs=None, rtol=None, atol=None,
            check="values"):
        """inputs: list of tensors/None; outputs: tensor or list/tuple of tensors."""
        if name in self.names:
            raise ValueError("duplicate case name " + name)
        self.names.add(name)
        if isinstance(outputs, torch.Tensor):
            outputs = [outputs]
        outputs = list(outputs)
        if rtol is None or atol is None:
            worst = (0.0, 0.0)
            for o in outputs:
                r, a = default_tol(o.dtype)
                worst = (max(worst[0], r), max(worst[1], a))
            rtol = worst[0] if rtol is None else rtol
            atol = worst[1] if atol is None else atol
        self.cases.append({
            "name": name, "op": op, "attrs": attrs or {},
            "inputs": [tensor_input(t) for t in inputs],
            "outputs": [tensor_output(o) for o in outputs],
            "rtol": rtol, "atol": atol, "check": check,
        })

    def write(self, path):
        with open(path, "w") as f:
            json.dump({"cases": self.cases}, f, separators=(",", ":"))
            f.write("\n")
