#!/usr/bin/python3
"""__NAME__: a lock client for tumbler (clients/PROTOCOL.md), written by
`tumbler client new`. It drives redis-py's Lock (python3-redis) on one
Redis node. To put your own lock library under tumbler, replace the three
calls marked LIBRARY with your library's, and keep the mapping of what it
says to ok, fail and info."""
import json, os, sys, time, uuid
import redis
from redis.exceptions import ConnectionError, LockError, LockNotOwnedError, TimeoutError

state = {"r": None, "ttl": 0, "steps": None, "step_id": 0}

def write(v):
    print(json.dumps(v), flush=True)

def step(name, key):
    """Reports a step when init armed it and waits for tumbler's continue."""
    if state["steps"] is not None and name not in state["steps"]:
        return
    state["step_id"] += 1
    write({"type": "step", "id": state["step_id"], "step": name, "key": key})
    sys.stdin.readline()  # {"type": "continue", "in_reply_to": …}

def secret(s):
    """A password from the file or the variable init names."""
    if "file" in s:
        with open(s["file"]) as f:
            return f.read().rstrip("\n")
    return os.environ[s["env"]]

def lock(key, token=None, ttl_ms=None):
    # LIBRARY: the lock library's lock object.
    l = redis.lock.Lock(state["r"], key, timeout=(ttl_ms or state["ttl"]) / 1000, sleep=0.01, thread_local=False)
    if token is not None:
        l.local.token = token.encode()
    return l

def acquire(key, wait_ms):
    l = lock(key)
    # LIBRARY: the lock library's acquire.
    if not l.acquire(blocking=wait_ms > 0, blocking_timeout=wait_ms / 1000):
        return {"type": "fail", "error": "held by another owner", "held": True}
    step("acquired", key)
    return {"type": "ok", "lease": {"token": l.local.token.decode()}}

def release(key, token):
    try:
        lock(key, token).release()  # LIBRARY: the lock library's release.
    except LockNotOwnedError as e:
        return {"type": "fail", "error": "LockNotOwnedError: %s" % e}
    return {"type": "ok"}

def extend(key, token, ttl_ms):
    try:
        lock(key, token, ttl_ms).extend(ttl_ms / 1000, replace_ttl=True)  # LIBRARY: the lock library's extend.
    except LockNotOwnedError as e:
        return {"type": "fail", "error": "LockNotOwnedError: %s" % e}
    return {"type": "ok", "lease": {"token": token}}

def open_(req):
    """Answers init: the node, the credentials (read from where init says
    they are), TLS, the TTL and the steps to report."""
    if req["connect"] != "node":
        return {"type": "fail", "error": "connect %s: this client locks one node (connect node)" % req["connect"]}
    if req.get("options"):
        return {"type": "fail", "error": "options unknown: %s" % ", ".join(req["options"])}
    host, port = req["nodes"][0]["addr"].rsplit(":", 1)
    auth, tls = req.get("auth") or {}, req.get("tls")
    kw = {}
    if tls is not None:
        kw = {"ssl": True, "ssl_ca_certs": tls.get("ca_file"), "ssl_certfile": tls.get("cert_file"),
              "ssl_keyfile": tls.get("key_file"), "ssl_check_hostname": not tls.get("insecure_skip_verify"),
              "ssl_cert_reqs": "none" if tls.get("insecure_skip_verify") else "required"}
    state["r"] = redis.Redis(host=host, port=int(port), username=auth.get("user"),
                             password=secret(auth["password"]) if "password" in auth else None,
                             socket_timeout=req["read_timeout_ms"] / 1000, socket_connect_timeout=req["read_timeout_ms"] / 1000, **kw)
    state["ttl"], state["steps"] = req["ttl_ms"], req.get("steps")
    return {"type": "ok", "library": "__NAME__ (redis-py %s)" % redis.__version__}

def serve(req):
    t, key, lease = req["type"], req.get("key"), req.get("lease") or {}
    if t == "init":
        return open_(req)
    try:
        if t == "acquire":
            return acquire(key, req["wait_ms"])
        if t == "release":
            return release(key, lease.get("token"))
        if t == "extend":
            return extend(key, lease.get("token"), req["ttl_ms"])
        return {"type": "fail", "error": "unsupported request " + t}
    except (ConnectionError, TimeoutError, LockError, OSError) as e:  # it may have taken effect
        return {"type": "info", "error": "%s: %s" % (type(e).__name__, e)}

def main():
    for line in sys.stdin:
        req = json.loads(line)
        rep = serve(req)
        rep["in_reply_to"] = req["id"]
        write(rep)

main()
