#!/usr/bin/env python3
"""embed_text.py - writes a text file as a C string constant (build step of
backends/cuda: the device prelude and the GEMM kernel are kept as readable
.cuh files and embedded into the library).

Usage: embed_text.py INPUT OUTPUT SYMBOL
"""
import sys


def main():
    src, dst, sym = sys.argv[1:4]
    with open(src, encoding="utf-8") as f:
        text = f.read()
    out = [f"/* generated from {src.split('/')[-1]} by embed_text.py; do not edit */\n",
           f"const char {sym}[] =\n"]
    for line in text.splitlines(keepends=True):
        esc = line.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
        out.append(f'    "{esc}"\n')
    out.append(";\n")
    with open(dst, "w", encoding="utf-8") as f:
        f.write("".join(out))


if __name__ == "__main__":
    main()
