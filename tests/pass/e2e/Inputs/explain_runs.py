"""One run of explain_target.c's "run N [slow]" mode as `shapetrace import --format csv` reads it,
with exact times instead of measured ones: the across-runs checks of explain.test then do not depend
on how fast or loaded the machine is (a run measured under load once split the tree on
`calls of decompress > 10`).

usage: explain_runs.py N [slow] > run.csv
A request takes 1000 ns; a slow one calls decompress for 2000 ns more: the run's span is
1000 * N + 2 (fast) or 3000 * N + 2 (slow), two lines against N.
"""
import sys

n = int(sys.argv[1])
slow = len(sys.argv) > 2 and sys.argv[2] == "slow"
print("tid,func,dir,time_ns")
time = 0
print(f"1,main,0,{time}")
for _ in range(n):
    time += 1
    print(f"1,serve,0,{time}")
    if slow:
        print(f"1,decompress,0,{time + 400}")
        print(f"1,decompress,1,{time + 2400}")
        time += 3000
    else:
        time += 1000
    print(f"1,serve,1,{time}")
print(f"1,main,1,{time + 1}")
