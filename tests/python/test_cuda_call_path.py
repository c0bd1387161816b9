"""test_cuda_call_path.py - the per-call path of the Python binding on the
cuda backend (issue 5, host time of model calls): a graph whose kernels can
report errors (here a gather: out-of-range indices) does not make the call
wait for the GPU (ptc_run_options.deferred_errors, set by the binding); an
out-of-range index is reported by the executable's next call, as PyTorch
reports device-side asserts asynchronously, and calls after that work.
Skipped where torch has no GPU or ptc's cuda backend is unavailable (CI)."""
import os

import pytest
import torch
import torch.fx
import torch.nn as nn

import ptc
from cuda_util import requires_cuda

pytestmark = requires_cuda


class Gather(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(10, 4)

    def forward(self, idx, x):
        return self.emb(idx) * x


def _compiled():
    torch.manual_seed(0)
    m = Gather().cuda().eval()
    idx = torch.tensor([1, 2, 3], device="cuda")
    x = torch.randn(3, 4, device="cuda")
    fn = ptc.from_fx(torch.fx.symbolic_trace(m), [idx, x], backend="cuda")
    return m, fn, idx, x


@pytest.mark.skipif(os.environ.get("PTC_CUDA_SYNC_ERRORS", "0") not in ("", "0"),
                    reason="PTC_CUDA_SYNC_ERRORS set: runs wait for their error word")
def test_call_does_not_wait_for_the_gpu():
    """A gather graph's call returns while the stream is still busy: before
    deferred errors it waited for the stream to read its error word."""
    m, fn, idx, x = _compiled()
    with torch.no_grad():
        torch.testing.assert_close(fn(idx, x), m(idx, x))
        torch.cuda.synchronize()
        torch.cuda._sleep(200_000_000)  # ~0.1 s of GPU work queued ahead of the call
        y = fn(idx, x)
        busy = not torch.cuda.current_stream().query()
        torch.cuda.synchronize()
    assert busy, "the call waited for the stream"
    torch.testing.assert_close(y, m(idx, x))


@pytest.mark.skipif(os.environ.get("PTC_CUDA_SYNC_ERRORS", "0") not in ("", "0"),
                    reason="PTC_CUDA_SYNC_ERRORS set: errors come back from their own call")
def test_out_of_range_index_reported_by_the_next_call():
    m, fn, idx, x = _compiled()
    bad = torch.tensor([1, 12, 3], device="cuda")
    with torch.no_grad():
        fn(bad, x)  # queued; its error word is read back later
        torch.cuda.synchronize()
        with pytest.raises(ptc.Error) as ei:
            fn(idx, x)
        msg = str(ei.value)
        assert "out of bounds" in msg and "earlier run" in msg, msg
        for _ in range(3):  # the error is reported once; later calls work
            y = fn(idx, x)
        torch.cuda.synchronize()
        torch.testing.assert_close(y, m(idx, x))
        # many calls in flight (more than the pinned slots) stay right
        outs = [fn(idx, x * i) for i in range(20)]
        torch.cuda.synchronize()
        for i, o in enumerate(outs):
            torch.testing.assert_close(o, m(idx, x * i))
