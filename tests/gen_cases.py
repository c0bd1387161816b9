#!/usr/bin/python3
"""gen_cases.py - writes tests/data/ops_<family>.json: inputs and PyTorch's
outputs for every op of op set v1, read by tests/test_ops_torch.c.

Usage: /usr/bin/python3 tests/gen_cases.py [family ...]   (needs python3-torch)
Deterministic: every family seeds torch's RNG itself.
"""
import importlib
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "gen"))
import casegen  # noqa: E402

FAMILIES = ["elementwise", "reduce", "nn", "shape"]


def main(argv):
    fams = argv[1:] or FAMILIES
    out_dir = os.path.join(HERE, "data")
    os.makedirs(out_dir, exist_ok=True)
    for fam in fams:
        mod = importlib.import_module("cases_" + fam)
        import torch
        torch.manual_seed(1234)
        c = casegen.Collector()
        mod.cases(c)
        path = os.path.join(out_dir, "ops_%s.json" % fam)
        c.write(path)
        ops = sorted({x["op"] for x in c.cases})
        print("%s: %d cases, %d ops -> %s" % (fam, len(c.cases), len(ops), path))


if __name__ == "__main__":
    main(sys.argv)
