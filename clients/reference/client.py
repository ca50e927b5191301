#!/usr/bin/python3
"""tumbler's reference lock client (clients/PROTOCOL.md): SET NX PX and a
compare-and-delete release on one Redis node, through redis-py's plain
commands. Copy it to put your own lock library under tumbler."""
import json, os, sys, time, uuid
import redis

RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end"
EXTEND = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) else return 0 end"

def secret(s):
    return open(s["file"]).read().rstrip("\n") if "file" in s else os.environ[s["env"]]

def serve(r, ttl, req):
    t, key = req["type"], req.get("key")
    if t == "acquire":
        token, deadline = uuid.uuid4().hex, time.monotonic() + req["wait_ms"] / 1000
        while not r.set(key, token, nx=True, px=ttl):
            if time.monotonic() >= deadline:
                return {"type": "fail", "error": "held by another owner", "held": True}
            time.sleep(0.01)
        return {"type": "ok", "lease": {"token": token}}
    if t == "release":
        ok = r.eval(RELEASE, 1, key, req["lease"]["token"])
        return {"type": "ok"} if ok else {"type": "fail", "error": "not held"}
    if t == "extend":
        ok = r.eval(EXTEND, 1, key, req["lease"]["token"], req["ttl_ms"])
        return {"type": "ok", "lease": req["lease"]} if ok else {"type": "fail", "error": "not held"}
    return {"type": "fail", "error": "unsupported request " + t}

def main():
    r, ttl = None, None
    for line in sys.stdin:
        req = json.loads(line)
        try:
            if req["type"] == "init":
                host, port = req["nodes"][0]["addr"].rsplit(":", 1)
                auth = req.get("auth") or {}
                r = redis.Redis(host=host, port=int(port), username=auth.get("user"),
                                password=secret(auth["password"]) if "password" in auth else None,
                                socket_timeout=req["read_timeout_ms"] / 1000)
                ttl = req["ttl_ms"]
                rep = {"type": "ok", "library": "tumbler reference (redis-py %s)" % redis.__version__}
                if req.get("options"):
                    rep = {"type": "fail", "error": "options unknown: %s" % ", ".join(req["options"])}
            else:
                rep = serve(r, ttl, req)
        except (redis.ConnectionError, redis.TimeoutError) as e:
            rep = {"type": "info", "error": "%s: %s" % (type(e).__name__, e)}
        rep["in_reply_to"] = req["id"]
        print(json.dumps(rep), flush=True)

main()
