"""ZeRO-style data parallelism with ``functrax.shard_map``: the Adam state is split over the
8 devices of a 1-D mesh ``("data": 8)``, each device holding 1/8 of it.

Run with ``python examples/shard_map_zero.py`` (numpy backend, a few seconds). Flags:
``--steps``, ``--seed``, ``--lr``, ``--batch-size`` (the global batch, split over "data").
If no device count is configured, the script asks for 8 virtual CPU devices
(``FUNCTRAX_NUM_CPU_DEVICES=8``) before functrax is imported.

The model is an MLP ``16 -> 32 -> 32 -> 4`` (tanh, mean squared error) on synthetic data
drawn with ``functrax.random``. Its parameters are handled as ONE flat vector
(``functrax.flatten_util.ravel_pytree``), zero-padded to a multiple of the 8 devices, and
every device holds the full (replicated) parameter vector, but only its 1/8 slice of
Adam's ``mu`` and ``nu`` (``functrax.optim.adam``'s state of a slice). One jitted step is
one shard_map body:

1. each device computes the mean loss of its rows of the batch and its gradient
   (``functrax.value_and_grad`` inside the body, of the parameters made varying first with
   ``lax.pvary``: the gradient of a value that is the same on every device would be summed
   over the devices already, as JAX's ``check_vma``; ZeRO wants each device's own);
2. ``lax.psum_scatter(..., tiled=True)`` reduces the flat gradients over the devices and
   hands each device its slice of the sum (divided by 8: the mean of the equal-sized
   local means is the gradient of the global mean loss);
3. each device runs Adam on its slice: its slice of ``mu``/``nu`` and of the parameters;
4. ``lax.all_gather(..., tiled=True)`` rebuilds the full updated parameter vector on every
   device.

The same model is trained on one device with ``optim.adam`` on the parameter pytree and the
global batch (same initialization, same batches). The script prints both loss curves, the
maximum absolute parameter difference after ``--steps`` steps (which must be at float32
rounding level, as must Adam's moments: exit status 1 otherwise) and the optimizer memory
per device: the bytes of each device's block of the Adam state (placed with
``NamedSharding(mesh, P("data"))``) against a replicated Adam state (1/8 of it, asserted).
"""
import os

os.environ.setdefault("FUNCTRAX_NUM_CPU_DEVICES", "8")  # before functrax is imported

import argparse
import sys
import time

import numpy as np

import functrax
import functrax.numpy as fnp
from functrax import lax, optim, random
from functrax.flatten_util import ravel_pytree
from functrax.sharding import NamedSharding, PartitionSpec as P
from functrax.tree_util import tree_leaves, tree_map

SIZES = (16, 32, 32, 4)
N_DEV = 8
RTOL, ATOL = 1e-5, 1e-6


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--lr", type=float, default=1e-2)
    p.add_argument("--batch-size", type=int, default=64, help="global batch size")
    return p.parse_args(argv)


def init_params(key):
    keys = random.split(key, len(SIZES) - 1)
    return [{"w": random.normal(k, (m, n)) / np.sqrt(m), "b": fnp.zeros(n)}
            for k, m, n in zip(keys, SIZES[:-1], SIZES[1:])]


def make_data(key, n, teacher):
    kx, kn = random.split(key)
    x = random.normal(kx, (n, SIZES[0]))
    y = fnp.sin(x @ teacher) + 0.05 * random.normal(kn, (n, SIZES[-1]))
    return np.asarray(x), np.asarray(y)


def mlp(params, x):
    for layer in params[:-1]:
        x = fnp.tanh(x @ layer["w"] + layer["b"])
    return x @ params[-1]["w"] + params[-1]["b"]


def loss_fn(params, x, y):
    return fnp.mean((mlp(params, x) - y) ** 2)


def state_specs(state):
    """The slices of the flat Adam moments over "data"; the step count replicated."""
    return tree_map(lambda a: P("data") if np.ndim(a) == 1 else P(), state)


def make_zero_step(mesh, opt, unravel, n_params, n_padded):
    slice_size = n_padded // N_DEV

    def body(flat, state, x, y):
        # 1. local loss and gradient of this device's rows (no collectives in the loss)
        params = lax.pvary(unravel(flat[:n_params]), "data")  # this device's gradient
        loss, grads = functrax.value_and_grad(loss_fn)(params, x, y)
        g = fnp.pad(ravel_pytree(grads)[0], (0, n_padded - n_params))
        # 2. reduce-scatter: this device's slice of the summed gradient -> of the mean
        g_slice = lax.psum_scatter(g, "data", scatter_dimension=0, tiled=True) / N_DEV
        # 3. Adam on the slice (its slice of mu / nu, its slice of the parameters)
        start = lax.axis_index("data") * slice_size
        p_slice = lax.dynamic_slice(flat, (start,), (slice_size,))
        updates, state = opt.update(g_slice, state, p_slice)
        p_slice = optim.apply_updates(p_slice, updates)
        # 4. all-gather: the full updated parameters on every device
        flat = lax.all_gather(p_slice, "data", axis=0, tiled=True)
        return flat, state, lax.pmean(loss, "data")

    def step(flat, state, x, y):
        specs = state_specs(state)
        return functrax.shard_map(body, mesh=mesh,
                                  in_specs=(P(), specs, P("data"), P("data")),
                                  out_specs=(P(), specs, P()))(flat, state, x, y)

    return functrax.jit(step)


def make_single_step(opt):
    def step(params, state, x, y):
        loss, grads = functrax.value_and_grad(loss_fn)(params, x, y)
        updates, state = opt.update(grads, state, params)
        return optim.apply_updates(params, updates), state, loss
    return functrax.jit(step)


def bytes_per_device(mesh, tree, specs):
    """``{device: bytes of its blocks of tree}`` with the leaves placed as ``specs`` say."""
    per = {d: 0 for d in mesh.devices.flat}
    for leaf, spec in zip(tree_leaves(tree), tree_leaves(specs, is_leaf=lambda s:
                                                          isinstance(s, P))):
        for shard in functrax.device_put(leaf, NamedSharding(mesh, spec)).addressable_shards:
            per[shard.device] += np.asarray(shard.data).nbytes
    return per


def main(argv=None):
    args = parse_args(argv)
    t0 = time.perf_counter()
    if functrax.device_count() < N_DEV:
        print(f"needs {N_DEV} devices, found {functrax.device_count()} (set "
              f"FUNCTRAX_NUM_CPU_DEVICES={N_DEV})")
        return 2
    if args.batch_size % N_DEV:
        print(f"--batch-size {args.batch_size} must be divisible by the {N_DEV} devices")
        return 2
    mesh = functrax.make_mesh((N_DEV,), ("data",), devices=functrax.devices()[:N_DEV])
    k_init, k_data, k_teacher = random.split(random.key(args.seed), 3)
    teacher = random.normal(k_teacher, (SIZES[0], SIZES[-1])) / np.sqrt(SIZES[0])
    params = init_params(k_init)
    opt = optim.adam(args.lr)

    flat, unravel = ravel_pytree(params)
    n_params = flat.shape[0]
    n_padded = -(-n_params // N_DEV) * N_DEV
    flat = fnp.pad(flat, (0, n_padded - n_params))
    zero_state = opt.init(fnp.zeros(n_padded))  # global; split over "data" by the step
    zero_step = make_zero_step(mesh, opt, unravel, n_params, n_padded)
    s_params, s_state = params, opt.init(params)
    single_step = make_single_step(opt)

    print(f"ZeRO data parallel MLP {'->'.join(map(str, SIZES))} ({n_params} parameters, "
          f"padded to {n_padded} = {N_DEV} x {n_padded // N_DEV}) on {N_DEV} devices; "
          f"global batch {args.batch_size} = {N_DEV} x {args.batch_size // N_DEV}")
    z_losses, s_losses = [], []
    print(f"{'step':>5}  {'ZeRO loss':>12}  {'single-device loss':>18}")
    for step in range(args.steps):
        x, y = make_data(random.fold_in(k_data, step), args.batch_size, teacher)
        flat, zero_state, z_loss = zero_step(flat, zero_state, x, y)
        s_params, s_state, s_loss = single_step(s_params, s_state, x, y)
        z_losses.append(float(z_loss))
        s_losses.append(float(s_loss))
        print(f"{step + 1:>5}  {z_losses[-1]:>12.6f}  {s_losses[-1]:>18.6f}")

    flat = np.asarray(flat)
    z_params = unravel(fnp.asarray(flat[:n_params]))
    loss_diff = float(np.max(np.abs(np.array(z_losses) - np.array(s_losses))))
    param_diff, close = 0.0, bool(np.all(flat[n_params:] == 0))  # the padding stays 0
    for a, b in zip(tree_leaves(z_params), tree_leaves(s_params)):
        a, b = np.asarray(a), np.asarray(b)
        param_diff = max(param_diff, float(np.max(np.abs(a - b))))
        close = close and np.allclose(a, b, rtol=RTOL, atol=ATOL)
    # Adam is nearly invariant to the scale of the gradient: compare its moments too (the
    # EMAs of the gradient and of its square; the ZeRO ones unpadded)
    s_adam = s_state[0]
    z_adam = zero_state[0]
    for name in ("mu", "nu"):
        z = np.asarray(getattr(z_adam, name))
        s = np.asarray(ravel_pytree(getattr(s_adam, name))[0])
        close = close and np.allclose(z[:n_params], s, rtol=RTOL, atol=ATOL)
    print(f"max |ZeRO loss - single-device loss| = {loss_diff:.3g}")
    print(f"max |ZeRO params - single-device params| = {param_diff:.3g} "
          f"(allclose rtol={RTOL:g} atol={ATOL:g}, Adam mu/nu too: "
          f"{'yes' if close else 'NO'})")

    # optimizer memory: mu and nu (the step count is one replicated int32 scalar)
    moments = (z_adam.mu, z_adam.nu)
    per = bytes_per_device(mesh, moments, (P("data"), P("data")))
    sharded = sorted(set(per.values()))
    replicated = sum(np.asarray(m).nbytes for m in tree_leaves((s_adam.mu, s_adam.nu)))
    replicated_padded = sum(np.asarray(m).nbytes for m in moments)
    ratio_ok = len(sharded) == 1 and sharded[0] * N_DEV == replicated_padded
    print(f"Adam state (mu, nu) bytes per device: {sharded[-1]} sharded vs {replicated} "
          f"replicated (ratio {sharded[-1] / replicated:.4f}; x{N_DEV} = {replicated_padded}"
          f" = the padded replicated state: {'yes' if ratio_ok else 'NO'})")
    ok = (close and ratio_ok and loss_diff <= 1e-5 * max(1.0, max(s_losses))
          and s_losses[-1] < s_losses[0])
    print(("OK: ZeRO training matches single-device training" if ok else
           "MISMATCH: ZeRO training differs from single-device training") +
          f" ({time.perf_counter() - t0:.1f} s)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
