"""Data-parallel training of a small MLP with ``functrax.pmap`` on N virtual CPU devices,
or on many processes over MPI.

Run with ``python examples/pmap_data_parallel.py --devices 4`` (numpy backend, a few
seconds), or with ``mpiexec -n 2 python examples/pmap_data_parallel.py`` (needs
``functrax[mpi]``): launched by ``mpiexec`` the script calls
``functrax.distributed.initialize()``, each process owns ``--devices`` virtual CPU devices
(default 1) and feeds its own rows of every global batch, and the ``lax.pmean`` spans every
device of every process. Flags: ``--devices`` (virtual CPU devices of this process, set
before their first use), ``--steps``, ``--batch-size`` (the global batch, split evenly over
all devices), ``--lr``, ``--seed``. The script

1. makes a synthetic regression problem (``y = sin(3 x0) + x1 * x2`` plus noise) with
   ``functrax.random``;
2. initializes a 3-32-32-1 MLP and an SGD-with-momentum optimizer state
   (``functrax.optim.sgd``) and replicates both on every device with
   ``functrax.device_put_replicated``;
3. trains it data-parallel: each step splits the global batch into one shard per device
   (``functrax.device_put_sharded``); a ``pmap``-ed step computes each device's loss and
   gradients with ``value_and_grad``, averages them over the devices with ``lax.pmean``
   and applies the same update on every replica (parameters and optimizer state stay on
   the devices between steps: ``ShardedArray`` outputs feed the next step directly);
4. trains the same model on one device (a ``jit``-ed step on the whole global batch) and
   prints both loss curves side by side;
5. checks that every replica ends with identical parameters (under MPI: the replicas of
   every process, compared through a pmapped ``lax.all_gather``; each process also prints
   a checksum of its parameters) and that the data-parallel losses and parameters match
   single-device training (exit status 1 otherwise).

Under MPI, process 0 prints the loss table; every process prints its own ``[rank r]``
summary lines.
"""
import argparse
import hashlib
import sys

import numpy as np

import functrax
import functrax.numpy as fnp
from functrax import lax, nn, optim, random

SIZES = (3, 32, 32, 1)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--devices", type=int, default=None,
                   help="virtual CPU devices of this process (default 4; 1 under mpiexec)")
    p.add_argument("--steps", type=int, default=25)
    p.add_argument("--batch-size", type=int, default=128, help="global batch size")
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--seed", type=int, default=0)
    return p.parse_args(argv)


def make_data(key, n):
    """``(x, y)``: ``x`` uniform in [-1, 1]^3 (float32, ``(n, 3)``), ``y`` of shape ``(n, 1)``."""
    kx, kn = random.split(key)
    x = random.uniform(kx, (n, 3), minval=-1.0, maxval=1.0)
    y = fnp.sin(3.0 * x[:, :1]) + x[:, 1:2] * x[:, 2:3] + 0.05 * random.normal(kn, (n, 1))
    return np.asarray(x), np.asarray(y)


def init_params(key):
    keys = random.split(key, len(SIZES) - 1)
    return [{"w": nn.initializers.glorot_normal()(k, (m, n)), "b": fnp.zeros(n)}
            for k, m, n in zip(keys, SIZES[:-1], SIZES[1:])]


def mlp(params, x):
    for layer in params[:-1]:
        x = fnp.tanh(x @ layer["w"] + layer["b"])
    return x @ params[-1]["w"] + params[-1]["b"]


def loss_fn(params, x, y):
    return fnp.mean((mlp(params, x) - y) ** 2)


def make_steps(opt):
    def single_step(params, state, x, y):
        loss, grads = functrax.value_and_grad(loss_fn)(params, x, y)
        updates, state = opt.update(grads, state, params)
        return optim.apply_updates(params, updates), state, loss

    def parallel_step(params, state, x, y):
        loss, grads = functrax.value_and_grad(loss_fn)(params, x, y)
        # equal shards: the mean of the shard means is the global mean (loss and gradient)
        loss, grads = lax.pmean((loss, grads), axis_name="devices")
        updates, state = opt.update(grads, state, params)
        return optim.apply_updates(params, updates), state, loss

    return functrax.jit(single_step), functrax.pmap(parallel_step, axis_name="devices")


def shard(a, n):
    """This process's rows of the global batch ``a`` (all of them in a single process),
    split along the leading (batch) axis into ``n`` equal shards, one per local device."""
    p, r = functrax.process_count(), functrax.process_index()
    rows = a.shape[0] // p
    a = a[r * rows:(r + 1) * rows]
    return functrax.device_put_sharded(list(a.reshape((n, -1) + a.shape[1:])),
                                       functrax.local_devices()[:n])


def replicas_identical(tree) -> bool:
    for leaf in functrax.tree_util.tree_leaves(tree):
        shards = [np.asarray(s.data) for s in leaf.addressable_shards]
        if not all(np.array_equal(shards[0], s) for s in shards[1:]):
            return False
    return True


def same_on_every_process(tree) -> bool:
    """Are the replicas of every process identical? (All-gathered over the global axis.)"""
    gather = functrax.pmap(lambda t: functrax.tree_util.tree_map(
        lambda a: lax.all_gather(a, "devices"), t), axis_name="devices")
    for leaf in functrax.tree_util.tree_leaves(gather(tree)):
        every = np.asarray(leaf)  # (local devices, global devices, ...)
        if not all(np.array_equal(every[0, 0], v) for v in every.reshape((-1,) + every.shape[2:])):
            return False
    return True


def checksum(tree) -> str:
    """sha256 of the bytes of the first local replica of every leaf of ``tree``."""
    h = hashlib.sha256()
    for leaf in functrax.tree_util.tree_leaves(tree):
        h.update(np.ascontiguousarray(np.asarray(leaf.addressable_shards[0].data)).tobytes())
    return h.hexdigest()[:16]


def main(argv=None):
    args = parse_args(argv)
    mpi = functrax.distributed.launched_by_mpiexec()
    devices = args.devices if args.devices is not None else (1 if mpi else 4)
    functrax.config.update("num_cpu_devices", devices)  # before the first device use
    if mpi:
        functrax.distributed.initialize()
    n, n_all = functrax.local_device_count(), functrax.device_count()
    rank, n_proc = functrax.process_index(), functrax.process_count()
    def say(*a):  # the table: process 0 only
        if rank == 0:
            print(*a, flush=True)

    if args.batch_size % n_all:
        say(f"--batch-size {args.batch_size} must be divisible by the {n_all} devices")
        return 2
    k_data, k_init = random.split(random.key(args.seed))
    opt = optim.sgd(args.lr, momentum=0.9)
    params = init_params(k_init)
    state = opt.init(params)
    single_step, parallel_step = make_steps(opt)

    if n_proc > 1:
        say(f"data-parallel training on {n_all} devices in {n_proc} processes ({n} each, "
            f"MPI): {functrax.devices()}")
    else:
        say(f"data-parallel training on {n} devices: {functrax.local_devices()}")
    say(f"global batch {args.batch_size} = {n_all} shards of {args.batch_size // n_all}")
    p_params = functrax.device_put_replicated(params, functrax.local_devices())
    p_state = functrax.device_put_replicated(state, functrax.local_devices())
    s_params, s_state = params, state
    p_losses, s_losses = [], []
    say(f"{'step':>5}  {'pmap loss':>12}  {'single-device loss':>18}")
    for step in range(args.steps):
        x, y = make_data(random.fold_in(k_data, step), args.batch_size)
        p_params, p_state, p_loss = parallel_step(p_params, p_state, shard(x, n), shard(y, n))
        s_params, s_state, s_loss = single_step(s_params, s_state, x, y)
        p_losses.append(float(np.asarray(p_loss)[0]))
        s_losses.append(float(s_loss))
        say(f"{step + 1:>5}  {p_losses[-1]:>12.6f}  {s_losses[-1]:>18.6f}")

    identical = replicas_identical(p_params) and replicas_identical(p_state)
    if n_proc > 1:
        identical = identical and same_on_every_process((p_params, p_state))
    loss_diff = float(np.max(np.abs(np.array(p_losses) - np.array(s_losses))))
    param_diff = max(float(np.max(np.abs(np.asarray(p)[0] - np.asarray(s))))
                     for p, s in zip(functrax.tree_util.tree_leaves(p_params),
                                     functrax.tree_util.tree_leaves(s_params)))
    tag = f"[rank {rank}] " if n_proc > 1 else ""
    print(f"{tag}replicas identical: {'yes' if identical else 'NO'}", flush=True)
    print(f"{tag}max |pmap loss - single-device loss| = {loss_diff:.3g}", flush=True)
    print(f"{tag}max |pmap params - single-device params| = {param_diff:.3g}", flush=True)
    if n_proc > 1:
        print(f"{tag}params checksum: {checksum(p_params)}", flush=True)
    ok = (identical and loss_diff <= 1e-4 * max(1.0, max(s_losses)) and param_diff <= 1e-4
          and s_losses[-1] < s_losses[0])
    print(tag + ("OK: data-parallel training matches single-device training" if ok else
                 "MISMATCH: data-parallel training differs from single-device training"),
          flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
