#!/usr/bin/python3
"""check_examples.py BUILD_DIR - runs the two examples (examples/mlp.c and
examples/transformer_block.c) on each backend (ref, cpu) and compares the
output shape and checksums they print with the same networks computed by
PyTorch from the same deterministic weights (the examples' LCG, replayed here
in float32). Exit status 0 when all agree within 1e-4 (relative) + 1e-4
(absolute)."""
import re
import subprocess
import sys

import numpy as np
import torch
import torch.nn.functional as F

BACKENDS = ["ref", "cpu"]  # an unavailable backend is reported, not failed
LINE = re.compile(r"output 0: f32 \[([0-9, ]+)\]\s+checksum: sum=(\S+) abs_sum=(\S+) first=(\S+)")


class Lcg:
    """The examples' generator: 64-bit LCG, top 24 bits mapped to [-scale, scale)."""

    def __init__(self, seed):
        self.state = seed

    def uniform(self, scale, n, offset=0.0):
        out = np.empty(n, np.float32)
        one, two, inv = np.float32(1.0), np.float32(2.0), np.float32(16777216.0)
        for i in range(n):
            self.state = (self.state * 6364136223846793005 + 1442695040888963407) % 2**64
            v = np.float32(self.state >> 40) / inv * two - one
            out[i] = np.float32(offset) + v * np.float32(scale)
        return out

    def tensor(self, shape, scale, offset=0.0):
        return torch.from_numpy(self.uniform(scale, int(np.prod(shape)), offset)).reshape(shape)


def mlp():
    g = Lcg(42)

    def linear(i, o):
        scale = np.float32(1.0) / np.float32(i) * np.float32(4.0)
        return g.tensor((o, i), scale), g.tensor((o,), np.float32(0.1))

    fc1, fc2 = linear(16, 32), linear(32, 8)
    x = Lcg(7).tensor((4, 16), 1.0)
    return F.linear(torch.relu(F.linear(x, *fc1)), *fc2)


def transformer_block():
    g = Lcg(2024)
    b, s, heads, hd = 2, 8, 2, 8
    d, ffn = heads * hd, 4 * heads * hd

    def linear(i, o):
        return g.tensor((o, i), np.float32(2.0) / np.float32(i)), g.tensor((o,), np.float32(0.05))

    def norm():
        return g.tensor((d,), np.float32(0.1), 1.0), g.tensor((d,), np.float32(0.1))

    ln1, q, k, v, out = norm(), linear(d, d), linear(d, d), linear(d, d), linear(d, d)
    ln2, fc1, fc2 = norm(), linear(d, ffn), linear(ffn, d)
    x = Lcg(7).tensor((b, s, d), 1.0)

    def heads_of(t):
        return t.reshape(b, s, heads, hd).transpose(1, 2)

    h = F.layer_norm(x, (d,), *ln1, eps=1e-5)
    qh, kh, vh = (heads_of(F.linear(h, *p)) for p in (q, k, v))
    att = torch.softmax(qh @ kh.transpose(-2, -1) / np.sqrt(hd), dim=-1) @ vh
    x1 = x + F.linear(att.transpose(1, 2).reshape(b, s, d), *out)
    up = F.linear(F.layer_norm(x1, (d,), *ln2, eps=1e-5), *fc1)
    return x1 + F.linear(F.gelu(up, approximate="tanh"), *fc2)


def close(got, want):
    return abs(got - want) <= 1e-4 + 1e-4 * abs(want)


def check(name, exe, want, backend):
    name = "%s (%s)" % (name, backend)
    run = subprocess.run([exe, "--backend", backend], capture_output=True, text=True,
                         timeout=600)
    if run.returncode != 0 and "UNAVAILABLE" in run.stderr:
        print("note %s: backend unavailable here, not checked: %s" % (name, run.stderr.strip()))
        return True
    if run.returncode != 0:
        print("FAIL %s: exit %d\n%s%s" % (name, run.returncode, run.stdout[-2000:], run.stderr))
        return False
    m = LINE.search(run.stdout)
    if not m:
        print("FAIL %s: no 'output 0: ... checksum' line in:\n%s" % (name, run.stdout[-2000:]))
        return False
    shape = [int(t) for t in m.group(1).split(",")]
    got = [float(t) for t in m.group(2, 3, 4)]
    w = want.double()
    ref = [w.sum().item(), w.abs().sum().item(), w.flatten()[0].item()]
    ok = shape == list(want.shape) and all(close(a, b) for a, b in zip(got, ref))
    print("%s %s: shape %s sum/abs_sum/first %s, torch %s %s" % (
        "ok" if ok else "FAIL", name, shape, got, list(want.shape),
        ["%.6f" % r for r in ref]))
    return ok


def main(build):
    torch.set_num_threads(1)
    results = []
    for backend in BACKENDS:
        results.append(check("mlp", build + "/examples/example_mlp", mlp(), backend))
        results.append(check("transformer_block", build + "/examples/example_transformer",
                             transformer_block(), backend))
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
