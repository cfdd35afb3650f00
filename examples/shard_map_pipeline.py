"""Pipeline parallelism (a GPipe schedule) with ``functrax.shard_map`` on a 1-D mesh of 4
virtual CPU devices, ``("stage": 4)``.

Run with ``python examples/shard_map_pipeline.py`` (numpy backend, a few seconds). Flags:
``--steps``, ``--seed``, ``--lr``, ``--layers`` (4 or 8: 1 or 2 layers per stage),
``--microbatches``, ``--microbatch-size``. If no device count is configured, the script asks
for 4 virtual CPU devices (``FUNCTRAX_NUM_CPU_DEVICES=4``) before functrax is imported.

The model is an MLP of ``--layers`` equal ``16 -> 16`` tanh layers; their weights are
stacked along a leading axis, ``w (L, 16, 16)`` and ``b (L, 16)``, split over the stages
(``P("stage")``): stage ``s`` holds layers ``s * L/4 ... (s + 1) * L/4 - 1`` only. The
global batch is cut into ``--microbatches`` microbatches, replicated to every stage
(``P()``); the per-device program runs the GPipe forward schedule in a ``lax.scan`` of
``n_micro + n_stages - 1`` ticks. At each tick every stage applies its layers to the
activation it holds (stage 0 takes the next microbatch instead), then the activations move
one stage on with ``lax.ppermute`` (perm ``[(0, 1), (1, 2), (2, 3)]``); the last stage's
outputs from tick ``n_stages - 1`` on are the model's outputs for microbatches
``0, 1, ...``. The last stage computes the squared error and a ``lax.psum`` over "stage"
makes the loss (the mean over the global batch) available everywhere.

The gradient is taken OUTSIDE the shard_map (``functrax.value_and_grad`` of the
shard_mapped loss: the transpose of shard_map runs the backward schedule, the transpose of
each ``ppermute`` sending cotangents one stage back), in a jitted SGD step. The same model
is trained sequentially on one device (same initialization, same batches); the script
prints both loss curves, the maximum absolute parameter difference after ``--steps`` steps
(which must be at float32 rounding level: exit status 1 otherwise) and the weight memory
per device (one stage's layers) against the whole model.
"""
import os

os.environ.setdefault("FUNCTRAX_NUM_CPU_DEVICES", "4")  # before functrax is imported

import argparse
import sys
import time

import numpy as np

import functrax
import functrax.numpy as fnp
from functrax import lax, random
from functrax.sharding import NamedSharding, PartitionSpec as P

D = 16
N_STAGES = 4
RTOL, ATOL = 1e-5, 1e-6


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--lr", type=float, default=0.3)
    p.add_argument("--layers", type=int, default=4, choices=(4, 8))
    p.add_argument("--microbatches", type=int, default=6)
    p.add_argument("--microbatch-size", type=int, default=8)
    return p.parse_args(argv)


def init_params(key, n_layers):
    kw, kb = random.split(key)
    return {"w": random.normal(kw, (n_layers, D, D)) / np.sqrt(D),
            "b": 0.1 * random.normal(kb, (n_layers, D))}


def make_data(key, n_micro, mb, teacher):
    """Microbatches ``x, y`` of shape ``(n_micro, mb, 16)``."""
    kx, kn = random.split(key)
    x = random.normal(kx, (n_micro, mb, D))
    y = fnp.sin(x @ teacher) + 0.05 * random.normal(kn, (n_micro, mb, D))
    return np.asarray(x), np.asarray(y)


def apply_layers(w, b, h):
    """The layers ``w[i], b[i]`` one after the other (a Python loop: a few static layers)."""
    for i in range(w.shape[0]):
        h = fnp.tanh(h @ w[i] + b[i])
    return h


# --- the sequential single-device model ---


def loss_fn(params, x, y):
    return fnp.mean((apply_layers(params["w"], params["b"], x) - y) ** 2)


# --- the pipeline: the per-device program of shard_map ---


def stage_loss(params, xs, ys):
    """One stage: ``params`` its layers (``w (L/4, 16, 16)``, ``b (L/4, 16)``), ``xs``/``ys``
    every microbatch (only stage 0 reads ``xs``, only the last stage ``ys``)."""
    n_micro = xs.shape[0]
    stage = lax.axis_index("stage")
    last = N_STAGES - 1
    forward = [(i, i + 1) for i in range(N_STAGES - 1)]  # stage i sends to stage i + 1

    def tick(held, t):
        fresh = xs[fnp.minimum(t, n_micro - 1)]  # stage 0 feeds microbatch t
        h = apply_layers(params["w"], params["b"], fnp.where(stage == 0, fresh, held))
        return lax.ppermute(h, "stage", forward), h

    ticks = fnp.arange(n_micro + N_STAGES - 1)
    _, outs = lax.scan(tick, fnp.zeros_like(xs[0]), ticks)
    outs = outs[last:]  # on the last stage: the outputs of microbatches 0 .. n_micro - 1
    sq = fnp.where(stage == last, fnp.sum((outs - ys) ** 2), 0.0)
    return lax.psum(sq, "stage") / ys.size


def make_steps(mesh, lr):
    specs = {"w": P("stage"), "b": P("stage")}
    pipeline_loss = functrax.shard_map(stage_loss, mesh=mesh, in_specs=(specs, P(), P()),
                                       out_specs=P())

    def sgd(loss):
        def step(params, x, y):
            value, grads = functrax.value_and_grad(loss)(params, x, y)
            return functrax.tree_util.tree_map(lambda p, g: p - lr * g, params, grads), value
        return functrax.jit(step)

    return sgd(pipeline_loss), sgd(loss_fn), specs


def main(argv=None):
    args = parse_args(argv)
    t0 = time.perf_counter()
    if functrax.device_count() < N_STAGES:
        print(f"needs {N_STAGES} devices, found {functrax.device_count()} (set "
              f"FUNCTRAX_NUM_CPU_DEVICES={N_STAGES})")
        return 2
    mesh = functrax.make_mesh((N_STAGES,), ("stage",), devices=functrax.devices()[:N_STAGES])
    k_init, k_data, k_teacher = random.split(random.key(args.seed), 3)
    teacher = random.normal(k_teacher, (D, D)) / np.sqrt(D)
    params = init_params(k_init, args.layers)
    pipe_step, single_step, specs = make_steps(mesh, args.lr)
    n_micro, mb = args.microbatches, args.microbatch_size

    print(f"GPipe pipeline of {args.layers} layers {D}->{D} on {N_STAGES} stages "
          f"({args.layers // N_STAGES} per stage); global batch {n_micro * mb} = {n_micro} "
          f"microbatches of {mb}; {n_micro + N_STAGES - 1} ticks per forward pass")
    p_params = {k: functrax.device_put(v, NamedSharding(mesh, specs[k]))
                for k, v in params.items()}
    s_params = params
    p_losses, s_losses = [], []
    print(f"{'step':>5}  {'pipeline loss':>13}  {'single-device loss':>18}")
    for step in range(args.steps):
        x, y = make_data(random.fold_in(k_data, step), n_micro, mb, teacher)
        p_params, p_loss = pipe_step(p_params, x, y)
        s_params, s_loss = single_step(s_params, x.reshape(-1, D), y.reshape(-1, D))
        p_losses.append(float(p_loss))
        s_losses.append(float(s_loss))
        print(f"{step + 1:>5}  {p_losses[-1]:>13.6f}  {s_losses[-1]:>18.6f}")

    loss_diff = float(np.max(np.abs(np.array(p_losses) - np.array(s_losses))))
    param_diff, close = 0.0, True
    for name in params:
        a, b = np.asarray(p_params[name]), np.asarray(s_params[name])
        param_diff = max(param_diff, float(np.max(np.abs(a - b))))
        close = close and np.allclose(a, b, rtol=RTOL, atol=ATOL)
    print(f"max |pipeline loss - single-device loss| = {loss_diff:.3g}")
    print(f"max |pipeline params - single-device params| = {param_diff:.3g} "
          f"(allclose rtol={RTOL:g} atol={ATOL:g}: {'yes' if close else 'NO'})")

    per = {d: 0 for d in mesh.devices.flat}
    for name, v in params.items():
        for shard in functrax.device_put(v, NamedSharding(mesh, specs[name])) \
                .addressable_shards:
            per[shard.device] += np.asarray(shard.data).nbytes
    sizes = sorted(set(per.values()))
    whole = sum(np.asarray(v).nbytes for v in params.values())
    print(f"weight bytes per device: {sizes[-1]} (one stage: {args.layers // N_STAGES} "
          f"layer(s)) vs {whole} (the whole model, replicated): ratio "
          f"{sizes[-1] / whole:.4f}")
    ok = (close and len(sizes) == 1 and sizes[0] * N_STAGES == whole
          and loss_diff <= 1e-5 * max(1.0, max(s_losses)) and s_losses[-1] < s_losses[0])
    print(("OK: pipeline training matches single-device training" if ok else
           "MISMATCH: pipeline training differs from single-device training") +
          f" ({time.perf_counter() - t0:.1f} s)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
