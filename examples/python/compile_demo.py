"""compile_demo.py - ptc.compile on an unmodified PyTorch function: the
bytecode capture traces it, compiles the tensor code with libptc's cpu
backend, runs a print (a graph break) as plain Python and resumes capture
after it; then batch sizes change (automatic dynamic) and ptc.explain shows
the graphs, the break with its file:line, and the guards.

Run: PYTHONPATH=build/python /usr/bin/python3 examples/python/compile_demo.py
"""
import torch

import ptc

torch.manual_seed(0)
w1, w2 = torch.randn(32, 64), torch.randn(64, 16)


def mlp(x):
    h = torch.relu(x @ w1 + 0.1)
    print("  hidden mean %.4f" % h.mean().item())   # unsupported in a graph: a break
    return torch.softmax(h @ w2, dim=-1)


compiled = ptc.compile(mlp)
for batch in (8, 3, 17, 5):
    x = torch.randn(batch, 32)
    out = compiled(x)
    err = (out - mlp(x)).abs().max().item()
    print("batch %d: max |ptc - eager| = %.2e" % (batch, err))

stats = ptc.compile_stats()
print("graphs compiled: %d, graph breaks: %d, cache hits: %d"
      % (stats["graphs"], stats["breaks"], stats["cache_hits"]))
print(ptc.explain(mlp, torch.randn(4, 32)))
