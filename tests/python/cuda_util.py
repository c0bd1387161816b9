"""cuda_util.py - what the CUDA-tensor test files (test_cuda_tensors.py,
test_cuda_conv.py) share: the marker skipping them where torch has no GPU or
ptc's cuda backend is unavailable (CI), and an autouse fixture keeping eager
references in full f32 (cuDNN convolutions default to TF32; ptc follows
torch's settings through matmul_precision / conv_precision)."""
import pytest
import torch

import ptc


def cuda_skip_reason():
    """None when CUDA tensors can run through ptc's cuda backend, else why not."""
    if not torch.cuda.is_available():
        return "torch.cuda.is_available() is False"
    try:
        for name, ok, why in [tuple(b) + ("",) * (3 - len(b)) for b in ptc.backends()]:
            if name == "cuda":
                return None if ok else f"ptc cuda backend unavailable: {why}"
    except Exception as e:  # pragma: no cover - older binding
        return f"ptc.backends() failed: {e}"
    return "ptc has no cuda backend"


_WHY = cuda_skip_reason()
requires_cuda = pytest.mark.skipif(_WHY is not None, reason=_WHY or "")


@pytest.fixture(autouse=True)
def no_tf32():
    """Full f32 in eager (and, through the precision options, in ptc) unless a
    test turns TF32 on; the settings are restored afterwards."""
    old = torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    yield
    torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = old
