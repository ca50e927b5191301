"""What tumbler's Python lock clients share (clients/PROTOCOL.md): the
request loop, steps, options, secrets, redis-py's connection settings from
init, and Sentinel reached through the client's address map. Installed
beside each client's program (a manifest's "shared" files)."""
import json
import os
import sys
import time

import redis
import redis.sentinel


def log(msg):
    """Logs one line to stderr (stdout carries the protocol only)."""
    print(msg, file=sys.stderr, flush=True)


class InitError(Exception):
    """init cannot be served with these settings: reply fail."""


class Fail(Exception):
    """The call certainly had no effect: reply fail with this message.
    held=True on an acquire: the library found the key held by another
    owner (a "held" refusal, which tumbler's refusals checker judges)."""

    def __init__(self, msg, held=False):
        super().__init__(msg)
        self.held = held


ABSENT = object()


def describe(e):
    """An exception's class and message, with its causes (tooz and Symfony
    wrap the redis error that says what happened)."""
    parts, seen = [], set()
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        parts.append("%s: %s" % (type(e).__name__, e))
        e = e.__cause__ or e.__context__
    return " <- ".join(parts)


class Session:
    """One client process's side of the protocol."""

    def __init__(self):
        self.step_id = 0
        self.steps = None  # the steps tumbler may stop at (init's "steps"); None: all

    @staticmethod
    def send(obj):
        sys.stdout.write(json.dumps(obj) + "\n")
        sys.stdout.flush()

    def step(self, name, key):
        """Reports a step and waits for tumbler's continue (only a step
        init's "steps" names, when it names them)."""
        if self.steps is not None and name not in self.steps:
            return
        self.step_id += 1
        self.send({"type": "step", "id": self.step_id, "step": name, "key": key})
        while True:
            line = sys.stdin.readline()
            if not line:  # stdin closed: the run is over
                os._exit(0)
            msg = json.loads(line)
            if msg.get("type") == "continue" and msg.get("in_reply_to") == self.step_id:
                return
            log("ignored while at step %s: %s" % (name, line.strip()))


class Timings:
    """With TIMING_ENV set, how long each call spent in its handler (the
    library's own work, without the protocol's reading, decoding, encoding
    and writing around it), logged to stderr as "timing TYPE NS" lines, a
    batch at a time so that the log's writes fall outside nearly every
    call. BenchmarkProtocolCost (runner/protocol_bench_test.go) reads them
    to time the very cycles it times from tumbler's side."""

    BATCH = 64

    def __init__(self):
        self.on = bool(os.environ.get(TIMING_ENV))
        self.lines = []

    def add(self, kind, ns):
        if self.on:
            self.lines.append("timing %s %d" % (kind, ns))
            if len(self.lines) >= self.BATCH:
                self.flush()

    def flush(self):
        if self.lines:
            sys.stderr.write("\n".join(self.lines) + "\n")
            sys.stderr.flush()
            self.lines = []


TIMING_ENV = "TUMBLER_CLIENT_TIMING"


def serve(open_client):
    """Serves requests until stdin closes. open_client(init, session)
    returns a handler with .library and .handle(request) → reply; handle
    raises Fail when the call certainly had no effect, anything else is an
    unknown outcome (info)."""
    session, handler, timings = Session(), None, Timings()
    for line in iter(sys.stdin.readline, ""):
        req = json.loads(line)
        try:
            if req["type"] == "init":
                handler = None
                session.steps = req.get("steps")
                handler = open_client(req, session)
                rep = {"type": "ok", "library": handler.library}
            elif handler is None:
                rep = {"type": "fail", "error": "no init before %s" % req["type"]}
            else:
                start = time.perf_counter_ns()
                rep = handler.handle(req)
                timings.add(req["type"], time.perf_counter_ns() - start)
        except Fail as e:
            rep = {"type": "fail", "error": str(e)}
            if e.held:
                rep["held"] = True
        except Exception as e:  # init: it cannot run; a call: unknown outcome
            kind = "fail" if req["type"] == "init" else "info"
            rep = {"type": kind, "error": describe(e)}
            log("%s %s: %s" % (req["type"], req.get("key", ""), rep["error"]))
        rep["in_reply_to"] = req["id"]
        session.send(rep)
    # The daemon threads a library may run (tooz's heart) end with us;
    # leases still held are not released: tumbler records no such release.
    timings.flush()
    sys.stdout.flush()
    os._exit(0)


def options(init, known):
    """The init's options over the defaults in known (name → default, ABSENT
    for one the client derives from init); an InitError names unknown ones."""
    given = init.get("options") or {}
    unknown = sorted(set(given) - set(known))
    if unknown:
        raise InitError("options unknown: %s (this client takes: %s)"
                        % (", ".join(unknown), ", ".join(sorted(known)) or "none"))
    out = dict(known)
    out.update(given)
    return out


def number(opts, name, minimum=0.0, null=False):
    """Checks that options.name is a number above minimum (or null)."""
    v = opts[name]
    if v is None and null:
        return v
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v <= minimum:
        raise InitError("options.%s: %r must be a number above %g%s" % (name, v, minimum, " or null" if null else ""))
    return v


def boolean(opts, name):
    v = opts[name]
    if not isinstance(v, bool):
        raise InitError("options.%s: %r must be true or false" % (name, v))
    return v


def secret(where):
    """Reads a secret from where init says it is (a file or a variable)."""
    if where.get("file"):
        with open(where["file"]) as f:
            return f.read().rstrip("\n")
    if where.get("env"):
        if where["env"] not in os.environ:
            raise InitError("auth.password: environment variable %s is not set" % where["env"])
        return os.environ[where["env"]]
    raise InitError("auth.password names neither a file nor an environment variable")


def hostport(addr):
    host, port = addr.rsplit(":", 1)
    return host, int(port)


def require_kind(init, connect_modes, why):
    """Refuses a kind other than lock and a connect mode not in connect_modes
    (why[mode] says why the library cannot)."""
    if init["kind"] != "lock":
        raise InitError("kind %s: this client drives a lock (kind lock) only" % init["kind"])
    if init["connect"] not in connect_modes:
        raise InitError("connect %s: %s" % (init["connect"], why.get(init["connect"], "not supported")))


def redis_kwargs(init):
    """redis-py connection settings from init: read timeout, AUTH, TLS.
    redis-py 4.3.4 verifies the server's chain against ca_file but checks no
    host name by default (ssl_check_hostname=False) and has no setting for a
    name other than the address it dials, so tls.server_name is not checked."""
    kw = {}
    if init.get("read_timeout_ms"):
        kw["socket_timeout"] = init["read_timeout_ms"] / 1000
    auth = init.get("auth") or {}
    if auth.get("user"):
        kw["username"] = auth["user"]
    if auth.get("password"):
        kw["password"] = secret(auth["password"])
    tls = init.get("tls")
    if tls:
        kw["ssl"] = True
        kw["ssl_ca_certs"] = tls.get("ca_file")
        kw["ssl_certfile"] = tls.get("cert_file")
        kw["ssl_keyfile"] = tls.get("key_file")
        kw["ssl_cert_reqs"] = "none" if tls.get("insecure_skip_verify") else "required"
    return kw


class AddressMap:
    """init's address_map: an address a server announced → the address this
    client must dial. With a map, an announced address it does not route is
    refused (dialing it would bypass the client's proxy and its faults);
    without one (no proxies), addresses are dialed as announced."""

    def __init__(self, init):
        self.routes = init.get("address_map") or {}

    def __call__(self, host, port):
        if not self.routes:
            return host, int(port)
        to = self.routes.get("%s:%s" % (host, port))
        if to is None:
            raise redis.ConnectionError("Sentinel announced %s:%s, which init's address_map does not route" % (host, port))
        return hostport(to)


def mapped_sentinel(init):
    """redis.sentinel.Sentinel, subclassed so that every address it discovers
    goes through the client's address map. redis-py asks discover_master on
    every (re)connect of a master connection (SentinelManagedConnection.
    _connect_retry → SentinelConnectionPool.get_master_address), so after a
    failover the new primary is dialed through this client's proxy as well;
    replicas (discover_slaves) likewise."""
    route = AddressMap(init)

    class MappedSentinel(redis.sentinel.Sentinel):
        def discover_master(self, service_name):
            return route(*super().discover_master(service_name))

        def discover_slaves(self, service_name):
            return [route(h, p) for h, p in super().discover_slaves(service_name)]

    return MappedSentinel
