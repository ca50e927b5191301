#!/usr/bin/python3
"""The baseline of BenchmarkProtocolCost (runner/protocol_bench_test.go):
redis-py's Lock acquire()+release() timed inside Python, with no protocol
around it. It builds its Lock as clients/redis-py/client.py does (the same
connection settings and Lock arguments) and takes the lock the way that
client does for a request with wait_ms 0 (acquire(blocking=False)).

Usage: redispy_cycle.py ADDR KEY TTL_MS READ_TIMEOUT_MS. It then reads a
number N per line on stdin, runs N acquire+release cycles and writes one
line: each cycle's time in nanoseconds (time.perf_counter_ns), separated by
spaces. It exits when stdin closes. This is a benchmark's own driver, not
the lock client protocol."""
import sys
import time

import redis


def main():
    addr, key, ttl_ms, read_timeout_ms = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    host, port = addr.rsplit(":", 1)
    r = redis.Redis(host=host, port=int(port), socket_timeout=read_timeout_ms / 1000)
    lk = r.lock(key, timeout=ttl_ms / 1000, sleep=0.1, thread_local=True)
    clock = time.perf_counter_ns
    for line in sys.stdin:
        times = []
        for _ in range(int(line)):
            start = clock()
            if not lk.acquire(blocking=False):
                sys.exit("redispy_cycle: %s is held by another owner" % key)
            lk.release()
            times.append(clock() - start)
        sys.stdout.write(" ".join(map(str, times)) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
