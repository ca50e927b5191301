#!/usr/bin/python3
"""A lock client for tumbler (clients/PROTOCOL.md) driving redis-py's
asyncio lock, redis.asyncio.lock.Lock (python3-redis 4.3.4): a separate
implementation from redis.lock.Lock (the shipped client redis-py), with
its own acquire loop, Lua scripts and token handling, as asyncio
applications (FastAPI, aiohttp) use it. It lives outside clients/ as a
client directory of tumbler's own tests: loaded from disk (--client
contrib/clients/redis-py-asyncio), never embedded.

Steps: "acquired" after the lock's acquire returned True (on the way to a
grant), "releasing" before its release is sent (a holder stalled there
keeps the lock it is about to give back)."""
import asyncio, json, os, sys
import redis
import redis.asyncio
from redis.asyncio.lock import Lock
from redis.exceptions import ConnectionError, LockError, LockNotOwnedError, TimeoutError

class Client:
    def __init__(self):
        self.r, self.ttl, self.steps, self.step_id = None, 0, None, 0
        self.blocking_sleep = 0.01

    def write(self, v):
        sys.stdout.write(json.dumps(v) + "\n")
        sys.stdout.flush()

    def step(self, name, key):
        if self.steps is not None and name not in self.steps:
            return
        self.step_id += 1
        self.write({"type": "step", "id": self.step_id, "step": name, "key": key})
        sys.stdin.readline()  # the continue

    def lock(self, key, token=None, ttl_ms=None):
        l = Lock(self.r, key, timeout=(ttl_ms or self.ttl) / 1000, sleep=self.blocking_sleep, thread_local=False)
        if token is not None:
            l.local.token = token.encode()
        return l

    async def open(self, req):
        if req["connect"] != "node":
            return {"type": "fail", "error": "connect %s: this client locks one node" % req["connect"]}
        opts = dict(req.get("options") or {})
        self.blocking_sleep = float(opts.pop("sleep", 0.01))
        if opts:
            return {"type": "fail", "error": "options unknown: %s" % ", ".join(opts)}
        host, port = req["nodes"][0]["addr"].rsplit(":", 1)
        auth, tls, kw = req.get("auth") or {}, req.get("tls"), {}
        password = None
        if "password" in auth:
            p = auth["password"]
            password = open(p["file"]).read().rstrip("\n") if "file" in p else os.environ[p["env"]]
        if tls is not None:
            kw = {"ssl": True, "ssl_ca_certs": tls.get("ca_file"), "ssl_certfile": tls.get("cert_file"),
                  "ssl_keyfile": tls.get("key_file"), "ssl_check_hostname": not tls.get("insecure_skip_verify"),
                  "ssl_cert_reqs": "none" if tls.get("insecure_skip_verify") else "required"}
        t = req["read_timeout_ms"] / 1000
        self.r = redis.asyncio.Redis(host=host, port=int(port), username=auth.get("user"), password=password,
                                     socket_timeout=t, socket_connect_timeout=t, **kw)
        self.ttl, self.steps = req["ttl_ms"], req.get("steps")
        return {"type": "ok", "library": "redis.asyncio.lock.Lock (redis-py %s)" % redis.__version__}

    async def serve(self, req):
        t, key, lease = req["type"], req.get("key"), req.get("lease") or {}
        if t == "init":
            return await self.open(req)
        try:
            if t == "acquire":
                l = self.lock(key)
                wait = req["wait_ms"] / 1000
                if not await l.acquire(blocking=wait > 0, blocking_timeout=wait):
                    return {"type": "fail", "error": "not acquired: held by another owner", "held": True}
                self.step("acquired", key)
                return {"type": "ok", "lease": {"token": l.local.token.decode()}}
            if t == "release":
                self.step("releasing", key)
                try:
                    await self.lock(key, lease.get("token")).release()
                except LockNotOwnedError as e:
                    return {"type": "fail", "error": "LockNotOwnedError: %s" % e}
                return {"type": "ok"}
            if t == "extend":
                try:
                    await self.lock(key, lease.get("token"), req["ttl_ms"]).extend(req["ttl_ms"] / 1000, replace_ttl=True)
                except LockNotOwnedError as e:
                    return {"type": "fail", "error": "LockNotOwnedError: %s" % e}
                return {"type": "ok", "lease": {"token": lease.get("token")}}
            return {"type": "fail", "error": "unsupported request " + t}
        except (ConnectionError, TimeoutError, LockError, OSError, asyncio.TimeoutError) as e:
            return {"type": "info", "error": "%s: %s" % (type(e).__name__, e)}

async def main():
    c = Client()
    for line in sys.stdin:
        req = json.loads(line)
        rep = await c.serve(req)
        rep["in_reply_to"] = req["id"]
        c.write(rep)

asyncio.run(main())
