#!/usr/bin/python3
"""Soak: runs one long `tumbler run` and samples the resident memory (RSS,
from /proc) of the harness while it runs: the tumbler process itself, its
worker processes (the same executable), the lock client programs it started
(python3, php, …: any other executable than tumbler's and the servers') and
the servers (redis-server, valkey-server), each group apart.

    scripts/soak/soak.py [--interval 5] [--out DIR] [--max-slope MB_PER_MIN] [-- RUN ARGS]

RUN ARGS are `tumbler run`'s flags; by default a 10-minute soak of 16
redis-py clients with no faults:

    --lock client:redis-py --clients 16 --time-limit 10m --workload mutex --seed 1

It writes DIR/rss.csv (one row a sample: seconds since the start, each
group's RSS and anonymous RSS in MiB and how many processes it has),
DIR/summary.json and DIR/tumbler.{out,log}, the run's output, and prints a
table: each group's RSS at the start and the end of the workload, its
maximum over the whole run (the checks at the end included) and the slope of
a least-squares line through the second half of the workload (MiB per
minute); the same for the anonymous RSS (RssAnon: heaps and stacks, without
the pages of the executable, which each of the workers counts again as it
first runs a path of code). The workload is the span during which every
worker and client program was running; its first half is the warm-up.

When a group grows, GODEBUG=gctrace=1 in the environment makes every Go
process of the run log its garbage collections (the harness's to
DIR/tumbler.log, the workers' to the run directory's clients.log): the third
figure of "a->b->c MB" is the heap live after the collection, which grows
when tumbler keeps what it should not, while RSS also moves with pages
touched for the first time up to the heap's goal.

Exit code: tumbler's when it is not 0 (1 invalid, 2 unknown, …); else 3 when
--max-slope is given and a group's slope exceeds it; else 0. Run
`go build -o bin/tumbler ./cmd/tumbler` first (scripts/soak/run does)."""
import argparse
import csv
import json
import os
import signal
import subprocess
import sys
import time

DEFAULT_RUN = ["--lock", "client:redis-py", "--clients", "16", "--time-limit", "10m", "--workload", "mutex", "--seed", "1"]
SERVERS = ("redis-server", "valkey-server")
GROUPS = ("tumbler", "workers", "clients", "servers")


def processes():
    """pid → (ppid, exe, name) of every process we may read; name is its
    argv[0]'s base name (redis-server's executable is redis-check-rdb)."""
    out = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % name) as f:
                stat = f.read()
            ppid = int(stat[stat.rindex(")") + 2:].split()[1])
            exe = os.readlink("/proc/%s/exe" % name)
            with open("/proc/%s/cmdline" % name, "rb") as f:
                argv0 = f.read().split(b"\0")[0].split(b" ")[0].decode(errors="replace")
        except OSError:  # gone, or not ours to read
            continue
        out[int(name)] = (ppid, exe, os.path.basename(argv0))
    return out


def rss_mib(pid):
    """The process's resident memory in MiB: all of it (VmRSS), and its
    anonymous part (RssAnon: heaps and stacks, no pages of its executable
    or libraries, which every process running them counts again)."""
    got = {}
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith(("VmRSS:", "RssAnon:")):
                    got[line.split(":")[0]] = int(line.split()[1]) / 1024
    except OSError:
        return None
    if "VmRSS" not in got:  # a zombie
        return None
    return got["VmRSS"], got.get("RssAnon", 0.0)


def sample(root):
    """The RSS and anonymous RSS (MiB) and the process count of each group
    under root."""
    procs = processes()
    if root not in procs:
        return None
    exe = procs[root][1]
    children = {}
    for pid, (ppid, _, _) in procs.items():
        children.setdefault(ppid, []).append(pid)
    got = {g: [0.0, 0.0, 0] for g in GROUPS}
    todo = [root]
    while todo:
        pid = todo.pop()
        todo.extend(children.get(pid, []))
        if pid == root:
            group = "tumbler"
        elif procs[pid][1] == exe:
            group = "workers"
        elif procs[pid][2] in SERVERS:
            group = "servers"
        else:
            group = "clients"
        rss = rss_mib(pid)
        if rss is not None:
            got[group][0] += rss[0]
            got[group][1] += rss[1]
            got[group][2] += 1
    return got


def slope(points):
    """Least-squares slope of (minutes, MiB) points, in MiB per minute."""
    n = len(points)
    if n < 2:
        return 0.0
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    return sum((x - mx) * (y - my) for x, y in points) / sxx if sxx else 0.0


def summarize(rows):
    """Each group's start, end, max and second-half slope over the workload:
    the samples with every worker and client program running."""
    full = max((r["workers_n"], r["clients_n"]) for r in rows) if rows else (0, 0)
    work = [r for r in rows if (r["workers_n"], r["clients_n"]) == full]
    if full[1] == 0:
        raise ValueError("no client programs were ever seen running")
    t0, t1 = work[0]["t"], work[-1]["t"]
    half = [r for r in work if r["t"] >= (t0 + t1) / 2]
    out = {"workload_s": round(t1 - t0, 1), "samples": len(rows), "groups": {}}
    for g in GROUPS:
        out["groups"][g] = {
            "processes": max(r[g + "_n"] for r in work),
            "start_mib": round(work[0][g], 1),
            "end_mib": round(work[-1][g], 1),
            "max_mib": round(max(r[g] for r in rows), 1),
            "slope_mib_per_min": round(slope([(r["t"] / 60, r[g]) for r in half]), 3),
            "anon_start_mib": round(work[0][g + "_anon"], 1),
            "anon_end_mib": round(work[-1][g + "_anon"], 1),
            "anon_slope_mib_per_min": round(slope([(r["t"] / 60, r[g + "_anon"]) for r in half]), 3),
        }
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--interval", type=float, default=5, help="seconds between two samples (default 5)")
    ap.add_argument("--out", default="store/soak", help="directory of the samples and the run's output (default store/soak)")
    ap.add_argument("--tumbler", default="bin/tumbler", help="the tumbler binary (default bin/tumbler)")
    ap.add_argument("--max-slope", type=float, help="fail (exit 3) when a group's second-half slope exceeds this many MiB per minute")
    ap.add_argument("run", nargs="*", help="tumbler run's flags (after --)")
    a = ap.parse_args()
    if a.interval <= 0:
        ap.error("--interval %g: must be positive" % a.interval)
    if not os.access(a.tumbler, os.X_OK):
        ap.error("--tumbler %s: not an executable (go build -o bin/tumbler ./cmd/tumbler)" % a.tumbler)
    os.makedirs(a.out, exist_ok=True)
    argv = [a.tumbler, "run", "--store", os.path.join(a.out, "store")] + (a.run or DEFAULT_RUN)
    print("soak: " + " ".join(argv), file=sys.stderr)
    with open(os.path.join(a.out, "tumbler.out"), "w") as out, open(os.path.join(a.out, "tumbler.log"), "w") as log:
        run = subprocess.Popen(argv, stdout=out, stderr=log)
        for sig in (signal.SIGINT, signal.SIGTERM):  # tumbler stops its processes and still reports
            signal.signal(sig, lambda s, _: run.send_signal(s))
        rows, start = [], time.monotonic()
        while run.poll() is None:
            got = sample(run.pid)
            if got:
                row = {"t": round(time.monotonic() - start, 1)}
                for g in GROUPS:
                    row[g], row[g + "_anon"], row[g + "_n"] = round(got[g][0], 2), round(got[g][1], 2), got[g][2]
                rows.append(row)
            time.sleep(a.interval)
        code = run.wait()
    with open(os.path.join(a.out, "rss.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["t"] + [k for g in GROUPS for k in (g, g + "_anon", g + "_n")])
        w.writeheader()
        w.writerows(rows)
    try:
        summary = summarize(rows)
    except ValueError as e:
        print("soak: %s; tumbler exited %d (%s says why)" % (e, code, os.path.join(a.out, "tumbler.log")), file=sys.stderr)
        return code or 1
    summary["tumbler_exit"] = code
    with open(os.path.join(a.out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=2)
    print("tumbler exited %d; workload %.0f s, %d samples every %g s" % (code, summary["workload_s"], len(rows), a.interval))
    print("| MiB | processes | RSS start | RSS end | RSS max | RSS slope, 2nd half (MiB/min) | anon start | anon end | anon slope (MiB/min) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for g, s in summary["groups"].items():
        print("| %s | %d | %.1f | %.1f | %.1f | %+.3f | %.1f | %.1f | %+.3f |" % (
            g, s["processes"], s["start_mib"], s["end_mib"], s["max_mib"], s["slope_mib_per_min"],
            s["anon_start_mib"], s["anon_end_mib"], s["anon_slope_mib_per_min"]))
    if code != 0:
        return code
    if a.max_slope is not None:
        steep = [g for g, s in summary["groups"].items() if s["slope_mib_per_min"] > a.max_slope]
        if steep:
            print("soak: RSS grows faster than %g MiB/min: %s" % (a.max_slope, ", ".join(steep)), file=sys.stderr)
            return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
