"""Tensor parallelism (Megatron-LM) plus data parallelism with ``functrax.shard_map`` on a
2x4 mesh of 8 virtual CPU devices: ``("data": 2, "model": 4)``.

Run with ``python examples/shard_map_tensor_parallel.py`` (numpy backend, a few seconds).
Flags: ``--steps``, ``--seed``, ``--lr``, ``--batch-size`` (the global batch, split over
"data"). If no device count is configured, the script asks for 8 virtual CPU devices
(``FUNCTRAX_NUM_CPU_DEVICES=8``) before functrax is imported.

On several processes, ``mpiexec -n 2 python examples/shard_map_tensor_parallel.py`` (4
virtual devices each): ``functrax.distributed.initialize()``, then the same 2x4 mesh over
the devices of both processes (process r owns the row "data" = r), each process running its
own devices' blocks, the collectives over "data" going through MPI. Process 0 prints the
loss table; every process prints ``[rank r]`` lines: its comparison with single-device
training, a checksum of its final parameters, and whether they are identical on every
process (``functrax.experimental.multihost_utils.process_allgather``).

The model is a 2-layer MLP ``16 -> 64 -> 8`` (tanh hidden layer, mean squared error) on a
synthetic regression problem drawn with ``functrax.random``:

- the first layer's weight ``w1 (16, 64)`` is split by columns over "model"
  (``P(None, "model")``, its bias ``P("model")``): each model-parallel device computes
  16 of the 64 hidden units of its batch rows, with no communication;
- the second layer's weight ``w2 (64, 8)`` is split by rows (``P("model", None)``): each
  device multiplies its 16 hidden units by its 16 rows of ``w2``, and ONE ``lax.psum``
  over "model" adds the four partial products (the bias ``b2`` is replicated);
- the batch is split over "data" (``P("data", None)``); the loss is the mean over the
  global batch: ``lax.pmean`` over "data" of each data-parallel group's local mean.

The whole train step is ONE shard_map under ``functrax.jit``: each device takes
``value_and_grad`` of its ``local_loss`` inside the body and applies Adam
(``functrax.optim.adam``) to its own blocks of the parameters and of Adam's moments. The
gradients need no hand-written collective: as JAX 0.10 with ``check_vma``, values are typed
by the mesh axes they vary over, so the transpose of the ``psum`` hands each device the
cotangent of the sum as it is, and a parameter that is the same on every device of an axis
(the bias ``b2``; every parameter over "data") gets its gradient summed over that axis. The
blocks never leave their devices: under ``mpiexec`` each process keeps its devices' blocks
from step to step (nothing is gathered). The same model is trained on one
device (plain functions on the global arrays, same initialization, same batches), and the
script prints both loss curves, the maximum absolute parameter difference after
``--steps`` steps (which must be at float32 rounding level, as must Adam's moments: exit
status 1 otherwise), and
the parameter memory per device: the bytes of each device's blocks of the parameters
placed with ``functrax.device_put(param, NamedSharding(mesh, spec))`` against a fully
replicated copy.
"""
import os

# before functrax is imported: 8 devices in all (split over the processes of an MPI run)
os.environ.setdefault("FUNCTRAX_NUM_CPU_DEVICES", str(max(1, 8 // int(
    os.environ.get("PMI_SIZE", os.environ.get("OMPI_COMM_WORLD_SIZE", "1"))))))

import argparse
import hashlib
import sys
import time

import numpy as np

import functrax
import functrax.numpy as fnp
from functrax import lax, optim, random
from functrax.experimental.multihost_utils import process_allgather
from functrax.sharding import NamedSharding, PartitionSpec as P

D_IN, D_HIDDEN, D_OUT = 16, 64, 8
MESH_SHAPE, MESH_AXES = (2, 4), ("data", "model")
# the specs of the parameters: columns of w1 / b1 and rows of w2 over "model"
PARAM_SPECS = {"w1": P(None, "model"), "b1": P("model"), "w2": P("model", None), "b2": P()}
RTOL, ATOL = 1e-5, 1e-6


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--lr", type=float, default=1e-2)
    p.add_argument("--batch-size", type=int, default=64, help="global batch size")
    return p.parse_args(argv)


def init_params(key):
    k1, k2, k3, k4 = random.split(key, 4)
    return {"w1": random.normal(k1, (D_IN, D_HIDDEN)) / np.sqrt(D_IN),
            "b1": 0.1 * random.normal(k2, (D_HIDDEN,)),
            "w2": random.normal(k3, (D_HIDDEN, D_OUT)) / np.sqrt(D_HIDDEN),
            "b2": 0.1 * random.normal(k4, (D_OUT,))}


def make_data(key, n, teacher):
    """A batch of a noisy random "teacher" function: ``x (n, 16)``, ``y (n, 8)``."""
    kx, kn = random.split(key)
    x = random.normal(kx, (n, D_IN))
    y = fnp.sin(x @ teacher) + 0.05 * random.normal(kn, (n, D_OUT))
    return np.asarray(x), np.asarray(y)


# --- the single-device model (global arrays) ---


def mlp(params, x):
    h = fnp.tanh(x @ params["w1"] + params["b1"])
    return h @ params["w2"] + params["b2"]


def loss_fn(params, x, y):
    return fnp.mean((mlp(params, x) - y) ** 2)


# --- the tensor-parallel model: the per-device program of shard_map ---


def local_loss(params, x, y):
    """One device: ``x``/``y`` its rows of the batch, ``params`` its blocks (w1 ``(16, 16)``,
    b1 ``(16,)``, w2 ``(16, 8)``, b2 ``(8,)``)."""
    h = fnp.tanh(x @ params["w1"] + params["b1"])   # column-parallel: 16 hidden units
    partial = h @ params["w2"]                       # row-parallel: a partial product
    out = lax.psum(partial, "model") + params["b2"]  # the one all-reduce of the block
    return lax.pmean(fnp.mean((out - y) ** 2), "data")  # mean over the global batch


def state_specs(state):
    """The specs of Adam's state: its moments split as the parameters, its count replicated."""
    def spec(path, _):
        name = getattr(path[-1], "key", None)
        return PARAM_SPECS[name] if name in PARAM_SPECS else P()
    return functrax.tree_util.tree_map_with_path(spec, state)


def make_steps(mesh, opt, state):
    data_spec = P("data", None)

    def step(loss, params, state, x, y):
        value, grads = functrax.value_and_grad(loss)(params, x, y)
        updates, state = opt.update(grads, state, params)
        return optim.apply_updates(params, updates), state, value

    s_specs = state_specs(state)
    tp_step = functrax.jit(functrax.shard_map(
        lambda p, s, x, y: step(local_loss, p, s, x, y), mesh=mesh,
        in_specs=(PARAM_SPECS, s_specs, data_spec, data_spec),
        out_specs=(PARAM_SPECS, s_specs, P())))
    single_step = functrax.jit(lambda p, s, x, y: step(loss_fn, p, s, x, y))
    return tp_step, single_step


def global_value(x):
    """The global value of an array (gathered over the processes when it spans several)."""
    if getattr(x, "is_fully_addressable", True):
        return np.asarray(x)
    return np.asarray(process_allgather(x))


def per_device_bytes(mesh, params):
    """``{device: bytes of its blocks}`` of ``params`` placed with their PARAM_SPECS."""
    per = {d: 0 for d in mesh.local_devices}  # (this process's devices)
    for name, p in params.items():
        placed = functrax.device_put(p, NamedSharding(mesh, PARAM_SPECS[name]))
        for shard in placed.addressable_shards:
            per[shard.device] += np.asarray(shard.data).nbytes
    return per


def checksum(tree) -> str:
    """sha256 of the bytes of every leaf of ``tree``."""
    h = hashlib.sha256()
    for leaf in functrax.tree_util.tree_leaves(tree):
        h.update(np.ascontiguousarray(np.asarray(leaf)).tobytes())
    return h.hexdigest()[:16]


def same_on_every_process(tree) -> bool:
    """Is ``tree`` identical in every process? (Each leaf all-gathered over the processes.)"""
    every = process_allgather(tree)
    return all((np.asarray(g) == np.asarray(g)[0]).all()
               for g in functrax.tree_util.tree_leaves(every))


def main(argv=None):
    args = parse_args(argv)
    t0 = time.perf_counter()
    if functrax.distributed.launched_by_mpiexec():
        functrax.distributed.initialize()
    rank, n_proc = functrax.process_index(), functrax.process_count()
    tag = f"[rank {rank}] " if n_proc > 1 else ""

    def say(*a):  # the table: process 0 only
        if rank == 0:
            print(*a, flush=True)
    n_dev = int(np.prod(MESH_SHAPE))
    if functrax.device_count() < n_dev:
        print(f"needs {n_dev} devices, found {functrax.device_count()} (set "
              f"FUNCTRAX_NUM_CPU_DEVICES={n_dev})")
        return 2
    if args.batch_size % MESH_SHAPE[0]:
        print(f"--batch-size {args.batch_size} must be divisible by the {MESH_SHAPE[0]} "
              "data-parallel groups")
        return 2
    mesh = functrax.make_mesh(MESH_SHAPE, MESH_AXES, devices=functrax.devices()[:n_dev])
    k_init, k_data, k_teacher = random.split(random.key(args.seed), 3)
    teacher = random.normal(k_teacher, (D_IN, D_OUT)) / np.sqrt(D_IN)
    params = init_params(k_init)
    opt = optim.adam(args.lr)
    tp_step, single_step = make_steps(mesh, opt, opt.init(params))

    where = f" in {n_proc} processes (MPI)" if n_proc > 1 else ""
    say(f"tensor + data parallel MLP {D_IN}->{D_HIDDEN}->{D_OUT} on a mesh "
        f"{dict(mesh.shape)} of {n_dev} devices{where}; global batch {args.batch_size} = "
        f"{MESH_SHAPE[0]} x {args.batch_size // MESH_SHAPE[0]}")
    # the tensor-parallel copy starts placed as its specs say (each device its blocks)
    tp_params = {k: functrax.device_put(v, NamedSharding(mesh, PARAM_SPECS[k]))
                 for k, v in params.items()}
    tp_state = opt.init(params)
    s_params, s_state = params, opt.init(params)
    tp_losses, s_losses = [], []
    say(f"{'step':>5}  {'shard_map loss':>14}  {'single-device loss':>18}")
    for step in range(args.steps):
        x, y = make_data(random.fold_in(k_data, step), args.batch_size, teacher)
        tp_params, tp_state, tp_loss = tp_step(tp_params, tp_state, x, y)
        s_params, s_state, s_loss = single_step(s_params, s_state, x, y)
        tp_losses.append(float(global_value(tp_loss)))
        s_losses.append(float(s_loss))
        say(f"{step + 1:>5}  {tp_losses[-1]:>14.6f}  {s_losses[-1]:>18.6f}")

    loss_diff = float(np.max(np.abs(np.array(tp_losses) - np.array(s_losses))))
    param_diff, close = 0.0, True
    tp_params = {k: global_value(v) for k, v in tp_params.items()}
    tp_state = functrax.tree_util.tree_map(global_value, tp_state)
    for name in params:
        a, b = tp_params[name], np.asarray(s_params[name])
        param_diff = max(param_diff, float(np.max(np.abs(a - b))))
        close = close and np.allclose(a, b, rtol=RTOL, atol=ATOL)
    # Adam is nearly invariant to the scale of the gradient: compare its moments too (the
    # EMAs of the gradient and of its square), which a wrongly scaled gradient would change
    for a, b in zip(functrax.tree_util.tree_leaves(tp_state),
                    functrax.tree_util.tree_leaves(s_state)):
        close = close and np.allclose(np.asarray(a), np.asarray(b), rtol=RTOL, atol=ATOL)
    print(f"{tag}max |shard_map loss - single-device loss| = {loss_diff:.3g}")
    print(f"{tag}max |shard_map params - single-device params| = {param_diff:.3g} "
          f"(allclose rtol={RTOL:g} atol={ATOL:g}, Adam mu/nu too: "
          f"{'yes' if close else 'NO'})")

    replicated = sum(np.asarray(p).nbytes for p in params.values())
    per = per_device_bytes(mesh, params)
    sizes = sorted(set(per.values()))
    say(f"parameter bytes per device: {max(sizes)} sharded vs {replicated} replicated "
        f"(ratio {max(sizes) / replicated:.4f}; every device "
        f"{'holds the same' if len(sizes) == 1 else 'does NOT hold the same'} amount)")
    for name, p in params.items():
        blk = functrax.device_put(p, NamedSharding(mesh, PARAM_SPECS[name])) \
            .addressable_shards[0].data
        say(f"  {name}: global {tuple(p.shape)} {PARAM_SPECS[name]} -> per-device block "
            f"{tuple(blk.shape)}")
    ok = close and loss_diff <= 1e-5 * max(1.0, max(s_losses)) and s_losses[-1] < s_losses[0]
    if n_proc > 1:
        same = same_on_every_process((tp_params, tp_state))
        print(f"{tag}params checksum: {checksum(tp_params)}")
        print(f"{tag}parameters identical on every process: {'yes' if same else 'NO'}")
        ok = ok and same
    print(tag + ("OK: tensor-parallel training matches single-device training" if ok else
           "MISMATCH: tensor-parallel training differs from single-device training") +
          f" ({time.perf_counter() - t0:.1f} s)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
