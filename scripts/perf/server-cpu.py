#!/usr/bin/env python3
"""Per-byte cost of the storage daemons during TestDFSIO jobs, side by side.

Usage: scripts/perf/server-cpu.py OUT.json MARK [MARK...]   (stops on SIGINT/SIGTERM)

Only java processes whose command line contains one of the MARKs are looked at (e.g. the
HDFS root and the worktree of this run), so that other runs on the machine are left out.

Every interval (SERVER_CPU_INTERVAL, default 0.2 s) it reads /proc for
  - the HDFS DataNode (a java process whose command line names ...datanode.DataNode),
  - every Týr server process (command line names TyrServerMain), keyed by --data-dir,
  - the running TestDFSIO job JVM, if any: its operation (-write/-read/-clean) and its
    target (the -Dfs.defaultFS value),
and charges each daemon's per-thread CPU deltas (utime, stime) and its /proc/PID/io
deltas (write_bytes = bytes sent to the block layer, wchar = bytes passed to write
syscalls) to the job that was running, keyed "target op". Thread names are grouped with
digits dropped (epollEventLoopGroup-3-1 -> epollEventLoopGroup--). A job JVM's own CPU is
taken from its last sample before it exits (at most one interval short).
"""
import json, os, re, signal, sys, time

HZ = os.sysconf("SC_CLK_TCK")
out_path = sys.argv[1]
marks = [m.encode() for m in sys.argv[2:]]
interval = float(os.environ.get("SERVER_CPU_INTERVAL", "0.2"))
stop = False


def on_signal(*_):
    global stop
    stop = True


signal.signal(signal.SIGINT, on_signal)
signal.signal(signal.SIGTERM, on_signal)


def cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().split(b"\0")
    except OSError:
        return []


def stat_times(path):
    with open(path) as f:
        s = f.read()
    rest = s[s.rindex(")") + 2:].split()
    name = s[s.index("(") + 1:s.rindex(")")]
    return name, int(rest[11]), int(rest[12])  # utime, stime (fields 14, 15)


def threads(pid):
    out = {}
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            try:
                name, u, s = stat_times(f"/proc/{pid}/task/{tid}/stat")
                out[tid] = (re.sub(r"[0-9]+", "", name), u, s)
            except (OSError, ValueError):
                pass
    except OSError:
        pass
    return out


def io(pid):
    d = {}
    try:
        with open(f"/proc/{pid}/io") as f:
            for line in f:
                k, v = line.split(":")
                d[k] = int(v)
    except OSError:
        pass
    return d


def scan():
    daemons, job = {}, None
    for pid in filter(str.isdigit, os.listdir("/proc")):
        c = cmdline(pid)
        if not c or not c[0].endswith(b"java") or not any(m in a for a in c for m in marks):
            continue
        args = [a.decode(errors="replace") for a in c]
        if "org.apache.hadoop.hdfs.server.datanode.DataNode" in args:
            daemons[pid] = "datanode"
        elif any(a.endswith("TyrServerMain") for a in args):
            i = args.index("--data-dir") if "--data-dir" in args else -1
            daemons[pid] = "tyr:" + (os.path.basename(args[i + 1]) if i >= 0 else pid)
        elif "org.apache.hadoop.fs.TestDFSIO" in args:
            op = next((a for a in args if a in ("-write", "-read", "-clean")), "?")
            fs = next((a.split("=", 1)[1] for a in args if a.startswith("-Dfs.defaultFS=")), "?")
            # Variants of one file system (e.g. a write buffer size) are told apart by it.
            buf = next((a.split("=", 1)[1] for a in args if ".write.buffer.size=" in a), None)
            job = (pid, f"{fs}{' buffer=' + buf if buf else ''} {op}")
    return daemons, job


acc = {}  # key -> daemon -> {"threads": {name: [u, s]}, "io": {k: delta}}
jobs = {}  # key -> list of per-job client cpu [u, s] and count
prev_threads, prev_io = {}, {}
last_job, last_job_cpu = None, None
while not stop:
    daemons, job = scan()
    key = job[1] if job else "idle"
    for pid, dname in daemons.items():
        th, ios = threads(pid), io(pid)
        if pid in prev_threads:
            slot = acc.setdefault(key, {}).setdefault(dname, {"threads": {}, "io": {}})
            for tid, (name, u, s) in th.items():
                pu, ps = prev_threads[pid].get(tid, (name, 0, 0))[1:]
                t = slot["threads"].setdefault(name, [0, 0])
                t[0] += (u - pu) / HZ
                t[1] += (s - ps) / HZ
            for k in ("write_bytes", "wchar", "rchar", "read_bytes"):
                slot["io"][k] = slot["io"].get(k, 0) + ios.get(k, 0) - prev_io[pid].get(k, 0)
        prev_threads[pid], prev_io[pid] = th, ios
    # The job JVM: remember its latest CPU; when it is gone, charge it to its key.
    if last_job and (not job or job[0] != last_job[0]):
        j = jobs.setdefault(last_job[1], [0.0, 0.0, 0])
        j[0] += last_job_cpu[0]; j[1] += last_job_cpu[1]; j[2] += 1
    if job:
        try:
            _, u, s = stat_times(f"/proc/{job[0]}/stat")
            last_job_cpu = (u / HZ, s / HZ)
        except OSError:
            pass
    last_job = job
    time.sleep(interval)

with open(out_path, "w") as f:
    json.dump({"daemons": acc, "jobs": jobs, "interval": interval,
               "loadavg": open("/proc/loadavg").read().strip()}, f, indent=1)
