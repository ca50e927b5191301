#!/usr/bin/python3
"""A lock client program with no library behind it, for
BenchmarkProtocolCost (runner/protocol_bench_test.go): it exchanges exactly
the lines clients/redis-py/client.py exchanges for an acquire (the step
"granted", then ok with a lease) and a release (ok), through the same
shared code (clients/_shared/tumbler_client.py), and touches no Redis. Its
cycle is what the protocol itself costs a Python client, the floor under
the redis-py client's."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "clients", "_shared"))

import tumbler_client as tc  # noqa: E402


class Echo:
    library = "echo (no library)"

    def __init__(self, init, session):
        self.session = session
        self.n = 0

    def handle(self, req):
        if req["type"] == "acquire":
            self.session.step("granted", req["key"])
            self.n += 1
            return {"type": "ok", "lease": {"token": "echo-%d" % self.n}}
        if req["type"] == "release":
            return {"type": "ok"}
        raise tc.Fail("unsupported request %s" % req["type"])


if __name__ == "__main__":
    tc.serve(Echo)
