#!/usr/bin/python3
"""The floor under BenchmarkProtocolCost's Python clients
(runner/protocol_bench_test.go): it writes back every line it reads, with no
JSON, no protocol and no Redis. A round trip through it is what any two
processes exchanging a line over pipes cost on the machine: two wake-ups,
one of each process. This is a benchmark's own driver, not a lock client."""
import sys

for line in iter(sys.stdin.readline, ""):
    sys.stdout.write(line)
    sys.stdout.flush()
