"""test_badinput.py - wrong inputs at call time give clear Python exceptions.

Through ptc.from_fx (whose CompiledFunction is strict: it recompiles for
size changes only) and through a bare Executable: a wrong dtype or rank
raises ptc.Error carrying libptc's message ("input 0 (x): expected dtype
f32, got f64"); a tensor on a device no backend serves (meta; cuda when this
machine has it and the backend is cpu) raises ptc.Error naming the device; a
non-tensor argument raises TypeError. After each error the compiled function
still works on good inputs and has not recompiled.
"""

import pytest
import torch
import torch.fx

import ptc

BACKENDS = ["ref", "cpu"]


def _fn(x, y):
    return torch.relu(x) * y + 1.0


@pytest.fixture(params=BACKENDS)
def compiled(request):
    x, y = torch.randn(4, 8), torch.randn(4, 8)
    cg = ptc.from_fx(torch.fx.symbolic_trace(_fn), [x, y], backend=request.param)
    torch.testing.assert_close(cg(x, y), _fn(x, y))
    yield cg
    # Still serves good inputs, with the single compile it started with.
    x, y = torch.randn(4, 8), torch.randn(4, 8)
    torch.testing.assert_close(cg(x, y), _fn(x, y))
    assert cg.compiled.num_compiles == 1, cg.compiled.recompile_reasons


def test_wrong_dtype(compiled):
    with pytest.raises(ptc.Error) as info:
        compiled(torch.randn(4, 8, dtype=torch.float64), torch.randn(4, 8))
    msg = str(info.value)
    assert "expected dtype f32" in msg and "f64" in msg, msg
    assert info.value.code == "INVALID_ARGUMENT"
    assert info.value.message in msg


def test_wrong_dtype_second_input(compiled):
    with pytest.raises(ptc.Error, match=r"input 1.*expected dtype f32, got i64"):
        compiled(torch.randn(4, 8), torch.ones(4, 8, dtype=torch.int64))


def test_wrong_rank(compiled):
    with pytest.raises(ptc.Error, match=r"expected rank 2, got 3"):
        compiled(torch.randn(4, 8, 1), torch.randn(4, 8))


def test_meta_tensor(compiled):
    with pytest.raises(ptc.Error) as info:
        compiled(torch.empty(4, 8, device="meta"), torch.randn(4, 8))
    assert "meta" in str(info.value), str(info.value)
    assert info.value.code == "UNIMPLEMENTED"


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device on this machine")
def test_cuda_tensor_on_cpu_backend(compiled):
    with pytest.raises(ptc.Error) as info:
        compiled(torch.randn(4, 8, device="cuda"), torch.randn(4, 8, device="cuda"))
    assert "cuda" in str(info.value), str(info.value)


@pytest.mark.parametrize("bad", [3.0, "x", None, [1.0] * 8])
def test_non_tensor(compiled, bad):
    with pytest.raises(TypeError):
        compiled(bad, torch.randn(4, 8))


# ---- the same checks on a bare Executable ------------------------------------------------------

def _exe():
    g = ptc.Graph()
    x = g.add_input("x", torch.float32, [4, 8])
    (y,) = g.add_node("relu", [x])
    g.add_output(y)
    return ptc.compile_graph(g, backend="ref")


def test_executable_wrong_dtype_rank_device():
    exe = _exe()
    with pytest.raises(ptc.Error, match=r"input 0 \(x\): expected dtype f32, got f16"):
        exe.run([torch.randn(4, 8, dtype=torch.float16)])
    with pytest.raises(ptc.Error, match=r"input 0 \(x\): expected rank 2, got 1"):
        exe.run([torch.randn(32)])
    with pytest.raises(ptc.Error, match="meta"):
        exe.run([torch.empty(4, 8, device="meta")])
    with pytest.raises(TypeError):
        exe.run([1.0])
    assert not exe.accepts([torch.randn(4, 9)])
    with pytest.raises(ptc.Error):
        exe.check([torch.randn(4, 9)])
    x = torch.randn(4, 8)
    torch.testing.assert_close(exe.run([x])[0], torch.relu(x))


# ---- CompiledFunction(strict=True) directly ----------------------------------------------------

def _relu_build(example, dynamic_dims):
    g = ptc.Graph()
    x = g.add_input("x", example[0].dtype, list(example[0].shape))
    (y,) = g.add_node("relu", [x])
    g.add_output(y)
    return g


def test_compiled_function_strict():
    cf = ptc.CompiledFunction(_relu_build, backend="ref", strict=True, name="relu")
    for shape in ((3, 4), (5, 4)):  # size changes recompile
        x = torch.randn(*shape)
        torch.testing.assert_close(cf(x)[0], torch.relu(x))
    assert cf.num_compiles == 2
    with pytest.raises(ptc.Error, match=r"expected dtype f32, got f64"):
        cf(torch.randn(3, 4, dtype=torch.float64))
    with pytest.raises(ptc.Error, match=r"expected rank 2, got 3"):
        cf(torch.randn(3, 4, 2))
    assert cf.num_compiles == 2
    # Not strict: the same calls recompile instead.
    lax = ptc.CompiledFunction(_relu_build, backend="ref", name="relu")
    lax(torch.randn(3, 4))
    x64 = torch.randn(3, 4, dtype=torch.float64)
    torch.testing.assert_close(lax(x64)[0], torch.relu(x64))
    assert lax.num_compiles == 2
