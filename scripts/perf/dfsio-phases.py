#!/usr/bin/env python3
"""Where a TestDFSIO job's time goes, from scripts/perf/dfsio-phases.sh's output.

Usage: scripts/perf/dfsio-phases.py DIR [DIR...]   (one column per DIR, named by it)

Phases of each -write and -read job, in ms, on the job's own clock (class loads stamped
with wall-clock time, file system calls logged by blobfs.trace.log with their start):
  JVM -> TestDFSIO main; main -> first file system call (configuration, FileSystem
  initialize); control files (TestDFSIO's set-up, before its timer starts: the first
  call, a recursive delete, opens the store's connection); job submission and set-up
  (LocalJobRunner loaded -> first call of a map task); the maps less their I/O time
  (TestDFSIO's own: total MB / its throughput); reduce and job commit; result and exit.
Also: each map's time from the open of its control file to the open of its data file
(record reader, sort buffer, mapper set-up), and the metadata calls' count and summed time.
"""
import datetime
import os
import re
import sys


def wall(line):
    m = re.match(r'\[(\d+)-(\d+)-(\d+)T(\d+):(\d+):(\d+)\.(\d+)', line)
    d = datetime.datetime(*map(int, m.groups()[:6]), int(m.group(7)) * 1000,
                          tzinfo=datetime.timezone.utc)
    return d.timestamp() * 1000


def analyse(d, op):
    line = [l for l in open(f'{d}/times') if re.search(rf'(^|\s){op}\s', l)][-1]
    s = int(re.search(r'start_ms=(\d+)', line).group(1))
    e = int(re.search(r'end_ms=(\d+)', line).group(1))
    cl = open(f'{d}/cl{op}.log').read().splitlines()

    def load(name):
        return next(wall(l) for l in cl if name + ' ' in l)

    calls = []
    for l in open(f'{d}/job{op}.out'):
        if not l.startswith('FSTRACE '):
            continue
        t = l.split()
        i = t.index('us')
        calls.append((int(t[1]), int(t[i - 1]) / 1000, t[i - 2], ' '.join(t[2:i - 2]), t[i + 1]))
    res = open(f'{d}/res{op}.log').read()
    exe = float(re.search(r'Test exec time sec: ([\d.]+)', res).group(1)) * 1000
    mb = float(re.search(r'Total MBytes processed: ([\d.]+)', res).group(1))
    io = mb / float(re.search(r'Throughput mb/sec: ([\d.]+)', res).group(1)) * 1000
    maps = [c for c in calls if 'Map Task' in c[3]]
    after = [c for c in calls if c[0] > maps[-1][0] and 'Map Task' not in c[3]]
    first, last = calls[0][0], max(c[0] + c[1] for c in calls)
    main, ljr = load('org.apache.hadoop.fs.TestDFSIO'), load('org.apache.hadoop.mapred.LocalJobRunner')
    gaps, opened = [], None
    for c in maps:
        if c[2] == 'OPEN' and '/io_control/' in c[4]:
            opened = c[0] + c[1]
        elif c[2] in ('OPEN', 'CREATE') and '/io_data/' in c[4] and opened:
            gaps.append(c[0] - opened)
    phases = {
        'JVM start -> TestDFSIO main': main - s,
        'main -> first FS call (configuration, FS initialize)': first - main,
        'control files (untimed by TestDFSIO)': ljr - first,
        'job submission + set-up': maps[0][0] - ljr,
        'maps less their I/O': after[0][0] - maps[0][0] - io,
        'maps\' I/O (TestDFSIO)': io,
        'reduce + job commit': last - after[0][0],
        'result + JVM exit': e - last,
        'process': e - s,
        'TestDFSIO exec time': exe,
        'exec time less I/O ("outside")': exe - io,
    }
    first_call = calls[0]
    return phases, calls, gaps, first_call


def main(dirs):
    names = [os.path.basename(d.rstrip('/')) for d in dirs]
    for op in ('-write', '-read'):
        out = [analyse(d, op) for d in dirs]
        print(f'\n{op[1:]} job, ms\n')
        print('| phase | ' + ' | '.join(names) + ' |')
        print('|---|' + '---:|' * len(names))
        for k in out[0][0]:
            print(f'| {k} | ' + ' | '.join(f'{o[0][k]:.0f}' for o in out) + ' |')
        print('| metadata calls: count / summed ms | '
              + ' | '.join(f'{len(o[1])} / {sum(c[1] for c in o[1]):.0f}' for o in out) + ' |')
        print('| first call (kind, ms) | '
              + ' | '.join(f'{o[3][2].lower()} {o[3][1]:.0f}' for o in out) + ' |')
        print('| per map: control open -> data open | '
              + ' | '.join(', '.join(f'{g:.0f}' for g in o[2]) for o in out) + ' |')


if __name__ == '__main__':
    main(sys.argv[1:])
