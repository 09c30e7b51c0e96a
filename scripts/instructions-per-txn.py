#!/usr/bin/env python3
"""Instructions per transaction of a `shoal bench` worker, counted by callgrind.

Wall-clock A/B runs on a small shared VM move by 5-15 % from minute to minute; the
instructions a transaction executes move by about 1 %. This runs one benchmark point under
`valgrind --tool=callgrind`, collecting only inside FUNCTION (a symbol pattern, e.g.
'shoal_bench::workload::tpcc::shoal_txns::new_order*') and keeping each thread's counts
apart, then divides the measured worker's total by the number of transactions it ran (the
calls of the benchmark's per-operation function found in that thread's profile).

Instructions are not time: a transaction that waits on cache misses gains less throughput
than its instruction count falls. See docs/benchmarks.md, "Engine update 17".

Usage:
  scripts/instructions-per-txn.py [--out PREFIX] SHOAL_BINARY FUNCTION -- BENCH ARGS...
Example:
  scripts/instructions-per-txn.py target/release/shoal \
      'shoal_bench::workload::tpcc::shoal_txns::new_order*' -- \
      tpcc --variant new-order --engine shoal --warehouses 1 --threads 1 \
      --durability lazy --duration-s 3 --warmup-s 0

Prints: the profile file, the transactions counted and the instructions per transaction.
Needs valgrind (Debian: `apt-get install valgrind`); runs about 50 times slower than native.
"""
import argparse
import glob
import os
import re
import subprocess
import sys
import tempfile

# Every benchmark calls its operation through this trait method once per transaction; an
# impl in another module than its type demangles as `<impl ...MicroBench for ...>::op`.
OP_CALL = "MicroBench>::op"
OP_CALL_RE = re.compile(r"MicroBench(?: for [\w:]+)?>::op\b")


def calls_and_total(path):
    """(calls of OP_CALL, total instructions) of one callgrind output file."""
    names, calls, cfn, total = {}, 0, None, None
    with open(path, errors="replace") as f:
        for line in f:
            m = re.match(r"(c?fn)=\((\d+)\)(?: (.*))?", line)
            if m:
                kind, ident, name = m.groups()
                if name:
                    names[ident] = name
                cfn = ident if kind == "cfn" else cfn
                continue
            m = re.match(r"calls=(\d+)", line)
            if m and cfn is not None and OP_CALL_RE.search(names.get(cfn, "")):
                calls += int(m.group(1))
                continue
            m = re.match(r"(?:summary|totals):\s+(\d+)", line)
            if m and total is None:
                total = int(m.group(1))
    return calls, total or 0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", help="prefix of the callgrind files (default: a temporary dir)")
    p.add_argument("binary")
    p.add_argument("function")
    p.add_argument("bench", nargs=argparse.REMAINDER)
    a = p.parse_args()
    bench = a.bench[1:] if a.bench[:1] == ["--"] else a.bench
    if not bench:
        p.error("give the `shoal bench` arguments after `--`")
    if not os.access(a.binary, os.X_OK):
        p.error(f"{a.binary}: not an executable")
    out = a.out or os.path.join(tempfile.mkdtemp(prefix="shoal-cg-"), "callgrind.out")
    cmd = ["valgrind", "--tool=callgrind", "--separate-threads=yes",
           "--collect-atstart=no", f"--toggle-collect={a.function}",
           f"--callgrind-out-file={out}", a.binary, "bench", *bench]
    try:
        run = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    except FileNotFoundError:
        sys.exit("valgrind is not installed (Debian: apt-get install valgrind)")
    if run.returncode != 0:
        sys.exit(f"the benchmark failed under valgrind:\n{run.stderr[-2000:]}")
    found = False
    for path in sorted(glob.glob(out + "*")):
        calls, total = calls_and_total(path)
        if calls:
            found = True
            print(f"{path}: {calls} transactions, {total / calls:.0f} instructions each")
    if not found:
        sys.exit(f"no thread ran `{OP_CALL}` inside {a.function!r}: check the pattern")


if __name__ == "__main__":
    main()
