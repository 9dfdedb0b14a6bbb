#!/usr/bin/env python3
"""Run a command and write '<wall> <user> <sys> <maxrss KiB>' for its whole
process tree, like /usr/bin/time -f '%e %U %S %M' but with microseconds."""
import os, sys, time
out = sys.argv[2]
argv = sys.argv[3:]
t0 = time.monotonic()
pid = os.fork()
if pid == 0:
    try:
        os.execvp(argv[0], argv)
    finally:
        os._exit(127)
_, status, ru = os.wait4(pid, 0)
wall = time.monotonic() - t0
with open(out, 'w') as f:
    f.write("%.6f %.6f %.6f %d\n" % (wall, ru.ru_utime, ru.ru_stime, ru.ru_maxrss))
sys.exit(os.waitstatus_to_exitcode(status) if hasattr(os, 'waitstatus_to_exitcode') else (status >> 8))
