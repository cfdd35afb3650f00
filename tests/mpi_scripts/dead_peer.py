"""Run under ``mpiexec -n 2`` (tests/test_mpi.py): both ranks run one pmap collective, then
rank 1 stops taking part (``exit``: ``os._exit`` as if it died; ``hang``: it sleeps) while
rank 0 runs the next collective, which must end with CollectiveTimeoutError after
``collective_timeout_s`` (argv[2]) seconds instead of hanging; functrax.distributed then
aborts the MPI job (non-zero exit status).
"""
import os
import sys
import time

import numpy as np

import functrax
from functrax import lax

mode, timeout = sys.argv[1], float(sys.argv[2])
functrax.distributed.initialize()
f = functrax.pmap(lambda x: lax.psum(x, "i"), axis_name="i")
x = np.ones(functrax.local_device_count(), np.float32)
print(f"rank {functrax.process_index()}: first psum {np.asarray(f(x)).tolist()}", flush=True)
# the short timeout from here on (a loaded machine may start one rank seconds late)
functrax.config.update("collective_timeout_s", timeout)
if functrax.process_index() == 1:
    if mode == "exit":
        print("rank 1: exiting before the second collective", flush=True)
        os._exit(0)
    time.sleep(120)  # alive, but never reaches the collective
print("rank 0: second psum", flush=True)
f(x)
print("rank 0: UNREACHABLE: the second psum completed", flush=True)
