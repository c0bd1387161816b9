# vs_torch_models.py - the workloads of bench/vs_torch.py: small nn.Modules
# for the micro workloads (pointwise chain, softmax, norms, reductions,
# mm + bias + gelu, attention, a tiny graph) and the three models (resnet18,
# a BERT-base-sized encoder, a GPT-2-sized decoder), each with its inputs,
# sizes per device, the bytes an ideal fused kernel moves or the FLOPs it
# does, and the tolerance class used to check results against eager.
#
# Every module is traceable by torch.fx.symbolic_trace (the hand-written
# models too); transformers models, when used, are traced with transformers'
# own FX tracer. Nothing here times anything: see vs_torch.py.

import contextlib
import math
import os
from dataclasses import dataclass, field
from typing import Any, Callable, List, Optional, Tuple

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.fx


@dataclass
class Spec:
    """One built workload: the module (eval, on device), its inputs, and how
    to judge and rate it."""
    name: str
    kind: str                 # "mem" (GB/s), "flops" (GFLOP/s), "tiny" (us/call), "model"
    desc: str                 # sizes and what is computed, printed in the table legend
    module: nn.Module
    inputs: Tuple[torch.Tensor, ...]
    tol: str                  # tolerance class: "pointwise", "reduce", "matmul", "model"
    bytes: int = 0            # ideal fused kernel: bytes read + written (kind "mem")
    flops: int = 0            # kind "flops"
    note: str = ""            # e.g. which implementation of a model was used
    trace: Optional[Callable[..., Any]] = None   # FX tracer (module, inputs) -> GraphModule; None = symbolic_trace
    extra: dict = field(default_factory=dict)


@contextlib.contextmanager
def environment(env):
    """Sets the environment variables of the dict `env` (ptc's PTC_CUDA_*
    knobs, read at code generation) for the block, then restores their old
    values or their absence."""
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


# ---- sizes ------------------------------------------------------------------------------
# cuda sizes are those of issue 5; cpu sizes fit a few cores in a few minutes.
SIZES = {
    "cpu": dict(pointwise=1 << 24, softmax=(4096, 4096), norm=(4096, 4096),
                rsum=(4096, 4096), var_mean=(4096, 4096), mm=(1024, 1024, 1024),
                attn=(2, 8, 512, 64), tiny=(32, 32), resnet_batch=8,
                bert=(2, 128), gpt2=(1, 256)),
    "cuda": dict(pointwise=1 << 26, softmax=(8192, 4096), norm=(8192, 4096),
                 rsum=(16384, 4096), var_mean=(16384, 4096), mm=(4096, 1024, 4096),
                 attn=(8, 16, 1024, 64), tiny=(32, 32), resnet_batch=32,
                 bert=(16, 128), gpt2=(8, 256)),
}
# --quick keeps the micro sizes (their timing is cheap) and shrinks the models.
QUICK_MODELS = {"cpu": dict(resnet_batch=2, bert=(1, 64), gpt2=(1, 64)),
                "cuda": dict(resnet_batch=8, bert=(4, 128), gpt2=(2, 256))}


def sizes_for(device: str, quick: bool) -> dict:
    s = dict(SIZES[device])
    if quick:
        s.update(QUICK_MODELS[device])
    return s


# ---- micro workloads ----------------------------------------------------------------------
class PointwiseChain(nn.Module):
    """Six elementwise ops: sin, *2, +1, relu, cos, sigmoid."""
    def forward(self, x):
        y = torch.sin(x) * 2.0
        y = torch.relu(y + 1.0)
        return torch.sigmoid(torch.cos(y))


class RowSoftmax(nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=-1)


class RMSNorm(nn.Module):
    """x * rsqrt(mean(x^2) + eps) * w, written out (torch 1.13 has no rms_norm)."""
    def __init__(self, n, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.rand(n) + 0.5)
        self.eps = eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class RowSum(nn.Module):
    def forward(self, x):
        return x.sum(dim=1)


class ColSum(nn.Module):
    def forward(self, x):
        return x.sum(dim=0)


class VarMean(nn.Module):
    def forward(self, x):
        return torch.var_mean(x, dim=1)


class MMBiasGelu(nn.Module):
    def __init__(self, k, n):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(k, n) / math.sqrt(k))
        self.bias = nn.Parameter(torch.randn(n) * 0.1)

    def forward(self, x):
        return F.gelu(x @ self.weight + self.bias)


class Attention(nn.Module):
    """softmax(q @ k^T * scale) @ v, written out."""
    def __init__(self, d):
        super().__init__()
        self.scale = 1.0 / math.sqrt(d)

    def forward(self, q, k, v):
        s = torch.matmul(q, k.transpose(-2, -1)) * self.scale
        return torch.matmul(torch.softmax(s, dim=-1), v)


class SDPA(nn.Module):
    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v)


class Tiny(nn.Module):
    """Ten pointwise ops on a small tensor: measures per-call host overhead."""
    def forward(self, x):
        y = torch.abs(-x) + 0.5
        y = torch.sqrt(y) * 0.1
        y = torch.sigmoid(torch.tanh(y))
        return (torch.relu(y) - 0.25) * 3.0


# ---- hand-written transformer models (used when transformers is absent) -------------------
class _SelfAttention(nn.Module):
    def __init__(self, hidden, heads, causal_len=0):
        super().__init__()
        self.heads, self.hd = heads, hidden // heads
        self.query = nn.Linear(hidden, hidden)
        self.key = nn.Linear(hidden, hidden)
        self.value = nn.Linear(hidden, hidden)
        self.out = nn.Linear(hidden, hidden)
        self.scale = 1.0 / math.sqrt(self.hd)
        if causal_len:
            mask = torch.tril(torch.ones(causal_len, causal_len, dtype=torch.bool))
            self.register_buffer("causal", mask.view(1, 1, causal_len, causal_len))
        else:
            self.causal = None

    def forward(self, x):
        b, s, h = x.size(0), x.size(1), x.size(2)
        q = self.query(x).view(b, s, self.heads, self.hd).transpose(1, 2)
        k = self.key(x).view(b, s, self.heads, self.hd).transpose(1, 2)
        v = self.value(x).view(b, s, self.heads, self.hd).transpose(1, 2)
        scores = torch.matmul(q, k.transpose(-1, -2)) * self.scale
        if self.causal is not None:
            scores = scores.masked_fill(~self.causal[:, :, :s, :s], float("-inf"))
        p = torch.softmax(scores, dim=-1)
        ctx = torch.matmul(p, v).transpose(1, 2).reshape(b, s, h)
        return self.out(ctx)


class BertLayer(nn.Module):
    """Post-norm encoder layer as in BERT (erf gelu, eps 1e-12)."""
    def __init__(self, hidden, heads, ffn):
        super().__init__()
        self.attn = _SelfAttention(hidden, heads)
        self.ln1 = nn.LayerNorm(hidden, eps=1e-12)
        self.inter = nn.Linear(hidden, ffn)
        self.output = nn.Linear(ffn, hidden)
        self.ln2 = nn.LayerNorm(hidden, eps=1e-12)

    def forward(self, x):
        x = self.ln1(x + self.attn(x))
        return self.ln2(x + self.output(F.gelu(self.inter(x))))


class BertEncoder(nn.Module):
    """BERT-base-sized: embeddings (word, position, token type 0) + LayerNorm, 12
    post-norm layers, hidden 768, 12 heads, ffn 3072. Returns the last hidden state."""
    def __init__(self, vocab=30522, hidden=768, layers=12, heads=12, ffn=3072, max_pos=512):
        super().__init__()
        self.word = nn.Embedding(vocab, hidden)
        self.pos = nn.Embedding(max_pos, hidden)
        self.tok_type = nn.Embedding(2, hidden)
        self.ln = nn.LayerNorm(hidden, eps=1e-12)
        self.register_buffer("position_ids", torch.arange(max_pos).view(1, max_pos))
        self.layers = nn.ModuleList([BertLayer(hidden, heads, ffn) for _ in range(layers)])

    def forward(self, input_ids):
        s = input_ids.shape[1]
        x = self.word(input_ids) + self.pos(self.position_ids[:, :s]) + self.tok_type.weight[0]
        x = self.ln(x)
        for layer in self.layers:
            x = layer(x)
        return x


class GPT2Block(nn.Module):
    """Pre-norm causal decoder block as in GPT-2 (tanh gelu, eps 1e-5)."""
    def __init__(self, hidden, heads, ctx):
        super().__init__()
        self.ln_1 = nn.LayerNorm(hidden, eps=1e-5)
        self.attn = _SelfAttention(hidden, heads, causal_len=ctx)
        self.ln_2 = nn.LayerNorm(hidden, eps=1e-5)
        self.fc = nn.Linear(hidden, 4 * hidden)
        self.proj = nn.Linear(4 * hidden, hidden)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.proj(F.gelu(self.fc(self.ln_2(x)), approximate="tanh"))


class GPT2Decoder(nn.Module):
    """GPT-2-sized (124M): token + position embeddings, 12 causal pre-norm blocks,
    hidden 768, 12 heads, final LayerNorm. Returns the last hidden state."""
    def __init__(self, vocab=50257, hidden=768, layers=12, heads=12, ctx=1024):
        super().__init__()
        self.wte = nn.Embedding(vocab, hidden)
        self.wpe = nn.Embedding(ctx, hidden)
        self.register_buffer("position_ids", torch.arange(ctx).view(1, ctx))
        self.h = nn.ModuleList([GPT2Block(hidden, heads, ctx) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(hidden, eps=1e-5)

    def forward(self, input_ids):
        s = input_ids.shape[1]
        x = self.wte(input_ids) + self.wpe(self.position_ids[:, :s])
        for block in self.h:
            x = block(x)
        return self.ln_f(x)


class _BufferTracer(torch.fx.Tracer):
    """symbolic_trace that also turns buffers into get_attr proxies, so forward code
    may slice a buffer by a traced size (`self.causal[:, :, :s, :s]`), as
    transformers' own tracer allows."""
    proxy_buffer_attributes = True


def _trace_proxy_buffers(module: nn.Module, inputs=None):
    gm = torch.fx.GraphModule(module, _BufferTracer().trace(module))
    gm.tracer_used = "torch.fx.Tracer with buffers proxied"
    return gm


def _init_small(module: nn.Module) -> nn.Module:
    """Initialise like BERT/GPT-2 (normal std 0.02, zero bias, unit LayerNorm) so
    activations stay in a sane range through 12 layers."""
    for m in module.modules():
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, std=0.02)
            if isinstance(m, nn.Linear) and m.bias is not None:
                nn.init.zeros_(m.bias)
    return module


# ---- transformers models (when importable) -------------------------------------------------
class _HFLastHidden(nn.Module):
    """Wraps a transformers model so that it returns the last hidden state tensor."""
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids):
        return self.model(input_ids=input_ids).last_hidden_state


def _hf_trace(wrapper: nn.Module, inputs=None):
    """An FX GraphModule of a transformers model (wrapped by _HFLastHidden), from the
    first tracer that works: transformers.utils.fx (transformers 4.x; plain
    torch.fx.symbolic_trace cannot trace these models), torch.fx.symbolic_trace,
    then torch._dynamo.export (torch-level graph; transformers 5 has no FX
    tracer). Sets `gm.tracer_used`. Raises the errors of every tracer tried."""
    errors = []
    try:
        from transformers.utils import fx as hf_fx
        gm = hf_fx.symbolic_trace(wrapper.model, input_names=["input_ids"])
        gm.tracer_used = "transformers.utils.fx"
        return gm
    except Exception as e:
        errors.append(f"transformers.utils.fx: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
    try:
        gm = torch.fx.symbolic_trace(wrapper)
        gm.tracer_used = "torch.fx.symbolic_trace"
        return gm
    except Exception as e:
        errors.append(f"torch.fx.symbolic_trace: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
    dyn = getattr(torch, "_dynamo", None)
    if inputs is not None and dyn is not None and hasattr(dyn, "export"):
        try:
            gm = dyn.export(wrapper, aten_graph=False)(*inputs).graph_module
            gm.tracer_used = "torch._dynamo.export"
            return gm
        except Exception as e:
            errors.append(f"torch._dynamo.export: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
    raise RuntimeError("no FX tracer could trace this transformers model: " + "; ".join(errors))


def _transformers():
    try:
        import transformers  # noqa: F401
        return transformers
    except Exception:
        return None


def _model_source(hf: str):
    """Returns the transformers module to use, or None for the hand-written models."""
    if hf == "no":
        return None
    t = _transformers()
    if t is None and hf == "yes":
        raise RuntimeError("--hf yes: transformers is not importable")
    return t


# ---- builders --------------------------------------------------------------------------------
def _rand(shape, device, dtype, scale=1.0):
    return (torch.randn(*shape, device=device, dtype=torch.float32) * scale).to(dtype)


def _es(dtype):
    return torch.empty((), dtype=dtype).element_size()


def build(name: str, device: str, dtype: torch.dtype, quick: bool, hf: str = "auto") -> Spec:
    """Builds workload `name` on `device` in `dtype` (eval mode, seeded)."""
    torch.manual_seed(0)
    sz = sizes_for(device, quick)
    es = _es(dtype)
    dt = str(dtype).replace("torch.", "")

    def fin(spec: Spec) -> Spec:
        spec.module = spec.module.to(device=device).eval()
        if dtype != torch.float32:
            spec.module = spec.module.to(dtype=dtype)
        return spec

    if name == "pointwise":
        n = sz["pointwise"]
        return fin(Spec(name, "mem", f"sin,*2,+1,relu,cos,sigmoid on 2^{n.bit_length() - 1} {dt}",
                        PointwiseChain(), (_rand((n,), device, dtype),), "pointwise", bytes=2 * n * es))
    if name == "softmax":
        m, n = sz["softmax"]
        return fin(Spec(name, "mem", f"softmax(x, -1), x {m}x{n}", RowSoftmax(),
                        (_rand((m, n), device, dtype),), "reduce", bytes=2 * m * n * es))
    if name == "layernorm":
        m, n = sz["norm"]
        mod = nn.LayerNorm(n)
        with torch.no_grad():
            mod.weight.uniform_(0.5, 1.5)
            mod.bias.uniform_(-0.5, 0.5)
        return fin(Spec(name, "mem", f"nn.LayerNorm({n}), x {m}x{n}", mod,
                        (_rand((m, n), device, dtype),), "reduce", bytes=(2 * m * n + 2 * n) * es))
    if name == "rmsnorm":
        m, n = sz["norm"]
        return fin(Spec(name, "mem", f"x*rsqrt(mean(x^2)+eps)*w, x {m}x{n}", RMSNorm(n),
                        (_rand((m, n), device, dtype),), "reduce", bytes=(2 * m * n + n) * es))
    if name == "row_sum":
        m, n = sz["rsum"]
        return fin(Spec(name, "mem", f"x.sum(1), x {m}x{n}", RowSum(),
                        (_rand((m, n), device, dtype),), "reduce", bytes=(m * n + m) * es))
    if name == "col_sum":
        m, n = sz["rsum"]
        return fin(Spec(name, "mem", f"x.sum(0), x {m}x{n}", ColSum(),
                        (_rand((m, n), device, dtype),), "reduce", bytes=(m * n + n) * es))
    if name == "var_mean":
        m, n = sz["var_mean"]
        return fin(Spec(name, "mem", f"torch.var_mean(x, 1), x {m}x{n}", VarMean(),
                        (_rand((m, n), device, dtype),), "reduce", bytes=(m * n + 2 * m) * es))
    if name == "mm_bias_gelu":
        m, k, n = sz["mm"]
        return fin(Spec(name, "flops", f"gelu(x@w+b), MxKxN {m}x{k}x{n}", MMBiasGelu(k, n),
                        (_rand((m, k), device, dtype),), "matmul", flops=2 * m * n * k))
    if name in ("attention", "sdpa"):
        b, h, s, d = sz["attn"]
        qkv = tuple(_rand((b, h, s, d), device, dtype) for _ in range(3))
        flops = 4 * b * h * s * s * d
        if name == "attention":
            return fin(Spec(name, "flops", f"softmax(q@k^T*scale)@v, b{b} h{h} s{s} d{d}",
                            Attention(d), qkv, "matmul", flops=flops))
        if not hasattr(F, "scaled_dot_product_attention"):
            raise NotApplicable("F.scaled_dot_product_attention needs torch>=2")
        return fin(Spec(name, "flops", f"F.scaled_dot_product_attention, b{b} h{h} s{s} d{d}",
                        SDPA(), qkv, "matmul", flops=flops))
    if name == "tiny":
        shape = sz["tiny"]
        return fin(Spec(name, "tiny", f"10 pointwise ops on {shape[0]}x{shape[1]} (per call, us)",
                        Tiny(), (_rand(shape, device, dtype),), "pointwise"))
    if name == "resnet18":
        try:
            import torchvision
        except Exception as e:
            raise NotApplicable(f"torchvision not importable ({e})")
        b = sz["resnet_batch"]
        mod = torchvision.models.resnet18()
        return fin(Spec(name, "model", f"torchvision resnet18, batch {b}, 3x224x224", mod,
                        (_rand((b, 3, 224, 224), device, dtype),), "model",
                        note=f"torchvision {torchvision.__version__}, random weights"))
    if name in ("bert", "gpt2"):
        b, s = sz[name]
        t = _model_source(hf)
        ids = None
        if name == "bert":
            vocab = 30522
            if t is not None:
                cfg = t.BertConfig()
                mod, note = _HFLastHidden(t.BertModel(cfg)), f"transformers {t.__version__} BertModel(BertConfig())"
            else:
                mod, note = _init_small(BertEncoder()), "hand-written BERT-base (nn.Linear/LayerNorm/softmax attention)"
            desc = f"BERT-base encoder, batch {b} seq {s}"
        else:
            vocab = 50257
            if t is not None:
                cfg = t.GPT2Config()
                cfg.use_cache = False
                mod, note = _HFLastHidden(t.GPT2Model(cfg)), f"transformers {t.__version__} GPT2Model(GPT2Config())"
            else:
                mod, note = _init_small(GPT2Decoder()), "hand-written GPT-2 (nn.Linear/LayerNorm/causal softmax attention)"
            desc = f"GPT-2 decoder, batch {b} seq {s}"
        ids = torch.randint(0, vocab, (b, s), device=device)
        return fin(Spec(name, "model", desc, mod, (ids,), "model", note=note,
                        trace=_hf_trace if t is not None else _trace_proxy_buffers))
    raise KeyError(name)


class NotApplicable(Exception):
    """A workload that cannot run in this environment (printed as n/a, not error)."""


WORKLOADS: List[str] = ["pointwise", "softmax", "layernorm", "rmsnorm", "row_sum", "col_sum",
                        "var_mean", "mm_bias_gelu", "attention", "sdpa", "tiny",
                        "resnet18", "bert", "gpt2"]

# Tolerances: max |out - eager| / max(1, max |eager|) must not exceed this.
TOLERANCE = {
    torch.float32: dict(pointwise=1e-4, reduce=1e-4, matmul=2e-3, model=1e-2),
    torch.bfloat16: dict(pointwise=3e-2, reduce=3e-2, matmul=6e-2, model=0.15),
}
