#!/usr/bin/python3
"""tumbler's client for redis-py's lock (redis.lock.Lock, python3-redis),
speaking clients/PROTOCOL.md.

It drives the library as its users do: one Lock object per key, made by
r.lock(name, timeout=…, sleep=…, thread_local=…), acquire(blocking=…,
blocking_timeout=…), extend(ttl, replace_ttl=True) and release() on the
object that acquired the lease. The one departure: a lease acquired by a
previous process of this client (restarted after a crash) has no Lock
object here, so one is built and its token set from the lease
(lock.local.token), the only way redis-py lets a caller name a lease it did
not acquire itself; without it such a lease could never be released.

redis-py clears the token before the release's reply arrives (lock.py,
Lock.release: self.local.token = None, then do_release; redis-py issue
#3847): a release whose reply is lost is info, and the Lock object is left
with no token, so releasing it again is refused by the library (LockError,
fail) while the key may still be held in Redis.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import redis  # noqa: E402
from redis.exceptions import LockError, ResponseError  # noqa: E402
from redis.lock import Lock  # noqa: E402

import tumbler_client as tc  # noqa: E402

CONNECT = {"node", "sentinel"}
WHY_NOT = {
    "nodes": "redis-py's Lock works on one Redis server; it has no Redlock over independent masters",
    "cluster": "redis-py 4.3.4's RedisCluster dials the addresses CLUSTER SLOTS announces as they are "
               "(it has no setting to remap them), so its traffic would bypass the client's proxies and their faults",
}


class SteppingLock(Lock):
    """redis-py's Lock, passed to r.lock as its lock_class (a documented
    parameter), reporting the step "granted" once do_acquire's SET NX
    succeeded, before acquire stores the token and returns to its caller."""

    session = None

    def do_acquire(self, token):
        ok = super().do_acquire(token)
        if ok and self.session is not None:
            self.session.step("granted", self.name)
        return ok


def connect(init):
    kw = tc.redis_kwargs(init)
    if init["connect"] == "sentinel":
        sentinels = [tc.hostport(a) for a in init["sentinels"]]
        s = tc.mapped_sentinel(init)(sentinels, sentinel_kwargs=dict(kw), **kw)
        return s.master_for(init["master_name"])
    host, port = tc.hostport(init["nodes"][0]["addr"])
    return redis.Redis(host=host, port=port, **kw)


class Client:
    def __init__(self, init, session):
        tc.require_kind(init, CONNECT, WHY_NOT)
        o = tc.options(init, {"timeout": tc.ABSENT, "sleep": 0.1, "thread_local": True, "blocking_timeout": tc.ABSENT})
        if o["timeout"] is tc.ABSENT:
            o["timeout"] = init["ttl_ms"] / 1000
        self.timeout = tc.number(o, "timeout", null=True)
        self.sleep = tc.number(o, "sleep")
        self.thread_local = tc.boolean(o, "thread_local")
        self.blocking_timeout = o["blocking_timeout"]
        if self.blocking_timeout is not tc.ABSENT:
            tc.number(o, "blocking_timeout", minimum=-1e-9, null=True)
        self.session = session
        self.r = connect(init)
        self.locks = {}  # key → the Lock object users keep for it
        self.acquired = {}  # token → key, for leases this process acquired
        self.library = "redis-py %s" % redis.__version__

    def lock(self, key):
        if key not in self.locks:
            lk = self.r.lock(key, timeout=self.timeout, sleep=self.sleep,
                             thread_local=self.thread_local, lock_class=SteppingLock)
            lk.session = self.session
            self.locks[key] = lk
        return self.locks[key]

    def handle(self, req):
        t, key = req["type"], req.get("key")
        if t == "acquire":
            return self.acquire(key, req["wait_ms"])
        if t in ("release", "extend"):
            lk = self.holder(key, req["lease"]["token"])
            if t == "release":
                return self.release(lk)
            return self.extend(lk, req)
        raise tc.Fail("unsupported request %s: redis-py's Lock is a lock (acquire, release, extend)" % t)

    def acquire(self, key, wait_ms):
        lk = self.lock(key)
        try:
            got = self.attempt(lk, wait_ms)
        except ResponseError as e:  # the server refused the SET (READONLY, NOAUTH, …): nothing set
            raise tc.Fail(tc.describe(e))
        if not got:
            # False only when every SET NX it sent answered "not set".
            raise tc.Fail("not acquired: held by another owner (acquire returned False)", held=True)
        token = lk.local.token.decode()
        self.acquired[token] = key
        return {"type": "ok", "lease": {"token": token}}

    def attempt(self, lk, wait_ms):
        if self.blocking_timeout is not tc.ABSENT:  # the plan's own setting wins
            return lk.acquire(blocking_timeout=self.blocking_timeout)
        if wait_ms == 0:
            return lk.acquire(blocking=False)
        return lk.acquire(blocking=True, blocking_timeout=wait_ms / 1000)

    def holder(self, key, token):
        """The Lock object that acquired the lease with this token; for a
        lease of a previous process, one built with the lease's token."""
        if self.acquired.get(token) == key:
            lk = self.lock(key)
            cur = lk.local.token
            if cur is not None and cur.decode() != token:
                raise tc.Fail("this key's Lock object now holds a newer lease (token %s); redis-py's Lock "
                              "holds one token at a time and would act on that one" % cur.decode())
            return lk
        lk = self.r.lock(key, timeout=self.timeout, sleep=self.sleep,
                         thread_local=self.thread_local, lock_class=SteppingLock)
        lk.local.token = token.encode()
        return lk

    @staticmethod
    def release(lk):
        try:
            lk.release()
        except LockError as e:  # LockNotOwnedError: the script found another token, nothing
            raise tc.Fail(tc.describe(e))  # deleted; "Cannot release an unlocked lock": nothing sent
        return {"type": "ok"}

    def extend(self, lk, req):
        try:
            lk.extend(req["ttl_ms"] / 1000, replace_ttl=True)
        except LockError as e:  # not owned (script), unlocked or no timeout (not sent)
            raise tc.Fail(tc.describe(e))
        return {"type": "ok", "lease": {"token": req["lease"]["token"]}}


if __name__ == "__main__":
    tc.serve(Client)
