#!/usr/bin/python3
"""tumbler's client for tooz's Redis lock (python3-tooz, its redis driver),
speaking clients/PROTOCOL.md.

What tooz adds over the redis-py Lock it wraps (tooz/drivers/redis.py):
- a heartbeat: coordinator.start(start_heart=True) runs tooz's Heart thread,
  which calls heartbeat() about every half lock_timeout, and heartbeat()
  resets the TTL of every lock the coordinator holds (redis-py's
  reacquire). A lock is held as long as the process runs, and lost when it
  stops (a pause, a crash) for longer than lock_timeout;
- retries: every lock call is wrapped in _handle_failures, which repeats it
  up to 15 times on a ConnectionError (a TimeoutError is not retried). A
  retried acquire makes a new token; a retried release finds redis-py's
  token already cleared and returns False. The client reads tooz's log of
  those retries so that a call it reports as failed after one is info;
- whole seconds: lock_timeout and socket_timeout are parsed with int(), so
  the lease is the plan's TTL rounded up to whole seconds, and so is the
  read timeout;
- its key: "%s_%s_lock" % (namespace, name) with the namespace as bytes, so
  the key in Redis is "b'_tooz'_<name>_lock".

It drives tooz as its users do: get_coordinator('redis://…', member_id),
start(start_heart=True), one get_lock(name) per key, acquire(blocking=…),
release(); an extend is the lock's own heartbeat(). The token in the lease
is read from the redis-py Lock tooz keeps (its _lock.local.token), the
owner value tooz wrote; a lease of a previous process of this client is
released through a new get_lock(name) with that token set, the only way to
name a lease tooz did not acquire here.
"""
import importlib.metadata
import logging
import math
import os
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import redis.sentinel  # noqa: E402
from redis.exceptions import LockError  # noqa: E402
from tooz import coordination  # noqa: E402

import tumbler_client as tc  # noqa: E402

CONNECT = {"node", "sentinel"}
WHY_NOT = {
    "nodes": "tooz's Redis driver works on one Redis server; it has no Redlock over independent masters",
    "cluster": "tooz's Redis driver takes one server (or a Sentinel), not a Redis Cluster",
}
URL_UNSAFE = set("@:/?#%&= ")


class Retries(logging.Handler):
    """Catches tooz's log of the ConnectionErrors it retried (its
    _handle_failures logs each at debug) on the thread serving requests."""

    def __init__(self):
        super().__init__(logging.DEBUG)
        self.seen = []
        self.main = threading.get_ident()

    def emit(self, record):
        if record.thread == self.main and "Redis connection error" in record.getMessage():
            self.seen.append(record.getMessage())


def url(init, o):
    """The coordinator URL a tooz user writes, with init's settings."""
    auth, tls = init.get("auth") or {}, init.get("tls")
    if auth.get("user"):
        raise tc.InitError("auth.user: tooz %s's Redis driver takes a password only (no ACL user)" % version())
    if tls and (tls.get("ca_file") or tls.get("insecure_skip_verify") or tls.get("server_name")):
        raise tc.InitError("tls: tooz %s's Redis driver passes only ssl, ssl_certfile and ssl_keyfile to redis-py "
                           "(RedisDriver.CLIENT_ARGS): no CA file, no server name, no way to skip verification" % version())
    userinfo = ""
    if auth.get("password"):
        pw = tc.secret(auth["password"])
        if URL_UNSAFE & set(pw):
            raise tc.InitError("auth.password: tooz takes the password in its URL and does not unquote it; "
                               "this one holds a character a URL cannot carry as is")
        userinfo = ":%s@" % pw
    q = ["lock_timeout=%d" % o["lock_timeout"], "socket_timeout=%d" % math.ceil(init["read_timeout_ms"] / 1000 or 30)]
    if tls:
        q.append("ssl=true")
        q += ["%s=%s" % (k, tls[f]) for k, f in (("ssl_certfile", "cert_file"), ("ssl_keyfile", "key_file")) if tls.get(f)]
    if init["connect"] == "sentinel":
        first, rest = init["sentinels"][0], init["sentinels"][1:]
        q.append("sentinel=%s" % init["master_name"])
        q += ["sentinel_fallback=%s" % s for s in rest]
        # tooz builds its redis.sentinel.Sentinel itself (RedisDriver._make_client):
        # the class it finds there is the one routing through the address map.
        redis.sentinel.Sentinel = tc.mapped_sentinel(init)
        return "redis://%s%s?%s" % (userinfo, first, "&".join(q))
    return "redis://%s%s?%s" % (userinfo, init["nodes"][0]["addr"], "&".join(q))


def version():
    return importlib.metadata.version("tooz")


class Client:
    def __init__(self, init, session):
        tc.require_kind(init, CONNECT, WHY_NOT)
        o = tc.options(init, {"lock_timeout": tc.ABSENT, "start_heart": True})
        if o["lock_timeout"] is tc.ABSENT:
            o["lock_timeout"] = math.ceil(init["ttl_ms"] / 1000)
        if isinstance(o["lock_timeout"], bool) or not isinstance(o["lock_timeout"], int) or o["lock_timeout"] < 1:
            raise tc.InitError("options.lock_timeout: %r must be whole seconds, 1 or more (tooz parses it with int())" % o["lock_timeout"])
        heart = tc.boolean(o, "start_heart")
        self.session = session
        self.retries = Retries()
        log = logging.getLogger("tooz.drivers.redis")
        log.setLevel(logging.DEBUG)
        log.addHandler(self.retries)
        member = ("tumbler-client-%d-%d" % (init.get("client", 0), os.getpid())).encode()
        self.coord = coordination.get_coordinator(url(init, o), member)
        self.coord.start(start_heart=heart)
        self.locks = {}  # key → the tooz lock users keep for it
        self.acquired = {}  # token → key, for leases this process acquired
        self.library = "tooz %s (redis driver, redis-py %s)" % (version(), redis.__version__)

    def lock(self, key):
        if key not in self.locks:
            lk = self.coord.get_lock(key)
            inner, do_acquire = lk._lock, lk._lock.do_acquire

            def stepping(token):  # the step "granted": SET NX succeeded, acquire has not returned
                ok = do_acquire(token)
                if ok:
                    self.session.step("granted", key)
                return ok

            inner.do_acquire = stepping
            self.locks[key] = lk
        return self.locks[key]

    def handle(self, req):
        t, key = req["type"], req.get("key")
        self.retries.seen = []
        if t == "acquire":
            lk = self.lock(key)
            got = lk.acquire(blocking=False if req["wait_ms"] == 0 else req["wait_ms"] / 1000)
            if not got:
                self.certain("acquire returned False")
                raise tc.Fail("not acquired: held by another owner (acquire returned False)")
            token = lk._lock.local.token.decode()
            self.acquired[token] = key
            return {"type": "ok", "lease": {"token": token}}
        if t == "release":
            if not self.holder(key, req["lease"]["token"]).release():
                self.certain("release returned False")
                raise tc.Fail("not released: release returned False (tooz logged the redis-py LockError)")
            return {"type": "ok"}
        if t == "extend":
            return self.extend(key, req)
        raise tc.Fail("unsupported request %s: tooz's lock is a lock (acquire, release, extend by heartbeat)" % t)

    def extend(self, key, req):
        try:
            beat = self.holder(key, req["lease"]["token"]).heartbeat()
        except Exception as e:
            if isinstance(e.__cause__, LockError) and not self.retries.seen:
                raise tc.Fail(tc.describe(e))  # the reacquire script found another token
            raise
        if not beat:
            raise tc.Fail("not extended: heartbeat returned False (the coordinator holds no such lock)")
        return {"type": "ok", "lease": {"token": req["lease"]["token"]}}

    def certain(self, what):
        """A False from tooz after it retried a ConnectionError may hide an
        effect of an earlier try: unknown."""
        if self.retries.seen:
            raise RuntimeError("%s after tooz retried a ConnectionError (its log: %s)" % (what, "; ".join(self.retries.seen)))

    def holder(self, key, token):
        """The tooz lock that acquired the lease; for a lease of a previous
        process, a new one with the lease's token."""
        if self.acquired.get(token) == key:
            lk = self.lock(key)
            cur = lk._lock.local.token
            if cur is not None and cur.decode() != token:
                raise tc.Fail("this key's lock now holds a newer lease (token %s); tooz's lock holds one token at a time" % cur.decode())
            return lk
        lk = self.coord.get_lock(key)
        lk._lock.local.token = token.encode()
        return lk


if __name__ == "__main__":
    logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    tc.serve(Client)
