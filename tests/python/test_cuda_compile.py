"""test_cuda_compile.py - ptc.compile (the bytecode capture, issue 6) on CUDA
tensors (issue 5): functions and modules with backend "cuda" and "auto", in
the default mode and mode="reduce-overhead" (CUDA graphs), checked against
plain PyTorch on the GPU; cache hits, a size change (recompile), outputs on
the device, torch's current stream (a side stream), and the per-call paths
the tiny benchmark uses (the module wrapper, the direct CompiledFunction).
Skipped where torch has no GPU, ptc's cuda backend is unavailable (CI) or
ptc._C was built without the capture (-Ddynamo=false)."""
import sys

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import ptc
from cuda_util import no_tf32, requires_cuda  # noqa: F401 (no_tf32: autouse fixture)

_NO_DYN = (sys.version_info[:2] not in ((3, 11), (3, 12))
           or not getattr(ptc._C, "DYN_SUPPORTED", 0) or not hasattr(ptc._C, "dyn_enable"))
pytestmark = [requires_cuda,
              pytest.mark.skipif(_NO_DYN, reason="ptc._C without the bytecode capture "
                                 "(or a Python other than 3.11/3.12)")]

MODES = [None, "reduce-overhead"]


@pytest.fixture(autouse=True)
def fresh_capture():
    ptc.reset()
    yield
    ptc.reset()


def _close(a, b, tol=1e-5):
    assert a.device == b.device, (a.device, b.device)
    assert a.dtype == b.dtype and a.shape == b.shape, (a.dtype, b.dtype, a.shape, b.shape)
    err = (a.float() - b.float()).abs().max().item() if a.numel() else 0.0
    scale = max(1.0, b.float().abs().max().item()) if b.numel() else 1.0
    assert err / scale <= tol, f"max abs err {err} (scale {scale}, tol {tol})"


def tiny(x):
    """The benchmark's tiny graph (bench/vs_torch_models.py Tiny)."""
    y = torch.abs(-x) + 0.5
    y = torch.sqrt(y) * 0.1
    y = torch.sigmoid(torch.tanh(y))
    return (torch.relu(y) - 0.25) * 3.0


class Tiny(nn.Module):
    def forward(self, x):
        return tiny(x)


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(64, 128)
        self.fc2 = nn.Linear(128, 16)

    def forward(self, x):
        h = F.gelu(self.fc1(x))
        return torch.softmax(self.fc2(h), dim=-1), h.sum(-1)


@pytest.mark.parametrize("mode", MODES)
def test_function_cuda(mode):
    fn = ptc.compile(tiny, backend="cuda", mode=mode)
    with torch.no_grad():
        for i in range(4):  # first call compiles, then cache hits (graph replays)
            x = torch.randn(32, 32, device="cuda")
            out = fn(x)
            assert out.is_cuda
            _close(out, tiny(x))
    s = ptc.compile_stats()
    assert s["graphs"] == 1 and s["breaks"] == 0, s
    assert s["cache_hits"] >= 3, s


@pytest.mark.parametrize("mode", MODES)
def test_module_cuda(mode):
    torch.manual_seed(0)
    m = Mlp().cuda().eval()
    cm = ptc.compile(m, backend="cuda", mode=mode)
    with torch.no_grad():
        for _ in range(3):
            x = torch.randn(8, 64, device="cuda")
            outs, refs = cm(x), m(x)
            assert len(outs) == 2
            for o, r in zip(outs, refs):
                _close(o, r, 1e-4)
        # another batch size: a recompile (or a dynamic dim), still right
        x = torch.randn(5, 64, device="cuda")
        for o, r in zip(cm(x), m(x)):
            _close(o, r, 1e-4)


@pytest.mark.parametrize("mode", MODES)
def test_auto_backend_picks_cuda(mode):
    fn = ptc.compile(tiny, backend="auto", mode=mode)
    with torch.no_grad():
        x = torch.randn(16, 8, device="cuda")
        out = fn(x)
        _close(out, tiny(x))
        xc = x.cpu()  # a cpu tensor: another entry on the cpu backend
        outc = fn(xc)
        assert outc.device.type == "cpu"
        _close(outc, tiny(xc))


@pytest.mark.parametrize("mode", MODES)
def test_side_stream(mode):
    """Runs are queued on torch's current stream: a side stream whose
    producer work is still pending when ptc is called sees the right data."""
    fn = ptc.compile(tiny, backend="cuda", mode=mode)
    with torch.no_grad():
        x0 = torch.randn(256, 256, device="cuda")
        fn(x0)  # compile outside the side stream
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                big = torch.randn(1024, 1024, device="cuda")
                x = (big @ big)[:256, :256] * 1e-3  # queued on s
                out = fn(x)
                ref = tiny(x)
                _close(out, ref)
        torch.cuda.synchronize()


def test_mode_results_same():
    """Default and reduce-overhead give the same values; a changed input is
    seen by the graph replay (no stale static copy)."""
    f0 = ptc.compile(tiny, backend="cuda")
    f1 = ptc.compile(tiny, backend="cuda", mode="reduce-overhead")
    with torch.no_grad():
        x = torch.randn(64, 16, device="cuda")
        for _ in range(3):
            a, b = f0(x), f1(x)
            _close(a, b)
            x.mul_(-1.5)  # in place: the next call reads the new values
            _close(f1(x), tiny(x))


def test_outputs_are_fresh():
    """Every call returns new output tensors (the caller may keep them)."""
    fn = ptc.compile(tiny, backend="cuda")
    with torch.no_grad():
        x = torch.randn(32, 32, device="cuda")
        a = fn(x)
        b = fn(x * 2)
        assert a.data_ptr() != b.data_ptr()
        _close(a, tiny(x))
        _close(b, tiny(x * 2))
