"""Train a small decoder-only transformer as a character-level language model on Python's
own standard library source code, then sample from it.

    python examples/train_transformer.py            # about a minute or two on two cores
    python examples/train_transformer.py --steps 2000 --d-model 128 --layers 4 --workdir runs/gpt

- **data**: a fixed handful of ``.py`` files of the standard library
  (``os.path.dirname(os.__file__)``: ``textwrap.py``, ``string.py``, ``functools.py``, ...),
  read in a fixed order and capped in size: real text, offline, the same on every machine
  with the same Python. The characters seen form the vocabulary; training batches are random
  windows of ``seq_len + 1`` characters, their start offsets drawn with ``functrax.random``;
- **model**: ``functrax.nn`` layers: token ``Embedding`` + learned position ``Embedding``,
  ``--layers`` pre-norm blocks (``LayerNorm`` -> causal ``MultiHeadAttention`` -> residual;
  ``LayerNorm`` -> ``MLP`` (4x width, gelu) -> residual), a final ``LayerNorm`` and a
  ``Linear`` head to the vocabulary. The model is written for one sequence ``(seq,)`` ->
  ``(seq, vocab)`` logits and ``functrax.vmap``-ed over the batch;
- **training**: one jitted step: ``functrax.value_and_grad`` of the next-character
  cross-entropy and ``functrax.optim.adamw`` (warmup + cosine decay, global-norm clipping);
  a tqdm progress bar shows the loss (plain prints without tqdm);
- **sampling**: autoregressive generation with a temperature from the prompt ``"def "``, by a
  jitted one-step function on a fixed-size window of ``seq_len`` characters (the context
  left-aligned and padded at the end, which the causal mask hides; the position to read
  passed as an argument), so it compiles once whatever the length;
- **threads**: BLAS runs on one thread unless ``--blas-threads`` says otherwise (these
  products are small; multi-threaded OpenBLAS on a busy machine is ~10x slower per step);
- **run directory** (``--workdir``, optional): ``functrax.training.RunDirectory`` (config),
  ``MetricsLogger`` (the loss curve, ``metrics.jsonl``) and a final checkpoint
  (``save_checkpoint``) of the model and the vocabulary.
"""

import argparse
import math
import os
import sys
import time


def _pin_blas_threads(argv):
    """``--blas-threads T`` (default 1; 0 keeps the library's default) into the environment,
    before numpy loads OpenBLAS. These products are small (2048 x 64 x 256): one BLAS thread
    runs them at full speed, and on a machine whose cores are busy with other jobs, OpenBLAS's
    threads spin waiting for each other and make a step about 10x slower. An
    ``OPENBLAS_NUM_THREADS`` already set is kept unless the flag is given."""
    value = None
    for i, a in enumerate(argv):
        if a == "--blas-threads" and i + 1 < len(argv):
            value = argv[i + 1]
        elif a.startswith("--blas-threads="):
            value = a.split("=", 1)[1]
    if value is None and "OPENBLAS_NUM_THREADS" not in os.environ:
        value = "1"
    if value not in (None, "0"):
        for var in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ[var] = value


if __name__ == "__main__":
    _pin_blas_threads(sys.argv[1:])

import numpy as np  # noqa: E402

import functrax  # noqa: E402
import functrax.numpy as fnp  # noqa: E402
from functrax import nn, optim, random  # noqa: E402

# a fixed choice of standard-library sources (missing ones are skipped), read in this order
SOURCE_FILES = ("textwrap.py", "string.py", "functools.py", "bisect.py", "heapq.py",
                "keyword.py", "colorsys.py", "fnmatch.py", "shlex.py", "glob.py",
                "copy.py", "contextlib.py", "abc.py", "numbers.py", "operator.py")
MAX_CHARS = 300_000
PROMPT = "def "


# ------------------------------------------------------------------------------ data


def load_text(max_chars=MAX_CHARS):
    """The concatenated sources (at most ``max_chars`` characters) and the list of files."""
    libdir = os.path.dirname(os.__file__)
    parts, used = [], []
    for name in SOURCE_FILES:
        path = os.path.join(libdir, name)
        if not os.path.isfile(path):
            continue
        with open(path, encoding="utf-8") as f:
            parts.append(f.read())
        used.append(name)
        if sum(map(len, parts)) >= max_chars:
            break
    text = "\n".join(parts)[:max_chars]
    if len(text) < 10_000:
        raise SystemExit(f"train_transformer.py: found only {len(text)} characters of "
                         f"standard-library source in {libdir}")
    return text, used


class Vocab:
    """Characters <-> integer ids (the sorted characters of the text)."""

    def __init__(self, text):
        self.chars = sorted(set(text))
        self.index = {c: i for i, c in enumerate(self.chars)}

    def __len__(self):
        return len(self.chars)

    def encode(self, s):
        return np.array([self.index[c] for c in s], np.int32)

    def decode(self, ids):
        return "".join(self.chars[int(i)] for i in ids)


# ----------------------------------------------------------------------------- model


class Block(nn.Module):
    """A pre-norm transformer block on one sequence ``(seq, d_model)``."""
    ln1: nn.LayerNorm
    attn: nn.MultiHeadAttention
    ln2: nn.LayerNorm
    mlp: nn.MLP

    def __init__(self, d_model, heads, *, key):
        k_attn, k_mlp = random.split(key)
        self.ln1 = nn.LayerNorm(d_model)
        self.attn = nn.MultiHeadAttention(heads, d_model, use_output_bias=True, key=k_attn)
        self.ln2 = nn.LayerNorm(d_model)
        self.mlp = nn.MLP(d_model, d_model, 4 * d_model, depth=1, activation=nn.gelu,
                          key=k_mlp)

    def __call__(self, x):
        h = self.ln1(x)
        x = x + self.attn(h, h, h, is_causal=True)
        return x + self.mlp(self.ln2(x))


class CharTransformer(nn.Module):
    """A decoder-only transformer: int tokens ``(seq,)`` -> next-token logits
    ``(seq, vocab)``; ``seq`` may be anything up to ``max_len``."""
    tok_emb: nn.Embedding
    pos_emb: nn.Embedding
    blocks: tuple
    ln_f: nn.LayerNorm
    head: nn.Linear
    max_len: int

    def __init__(self, vocab_size, max_len, d_model, layers, heads, *, key):
        keys = random.split(key, layers + 3)
        self.max_len = int(max_len)
        init = nn.initializers.normal(0.02)
        self.tok_emb = nn.Embedding(vocab_size, d_model, key=keys[0], embedding_init=init)
        self.pos_emb = nn.Embedding(max_len, d_model, key=keys[1], embedding_init=init)
        self.blocks = tuple(Block(d_model, heads, key=k) for k in keys[3:])
        self.ln_f = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab_size, key=keys[2], kernel_init=init)

    def __call__(self, tokens):
        x = self.tok_emb(tokens) + self.pos_emb(fnp.arange(tokens.shape[0]))
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x))


def make_model(vocab_size, *, seq_len=64, d_model=64, layers=2, heads=4, seed=0):
    """The model for windows of up to ``seq_len`` characters (its key from ``seed``)."""
    return CharTransformer(vocab_size, seq_len, d_model, layers, heads, key=random.key(seed))


def loss_fn(model, windows):
    """Mean next-character cross-entropy over a batch of windows ``(B, seq_len + 1)``."""
    inputs, targets = windows[:, :-1], windows[:, 1:]
    logits = functrax.vmap(model)(inputs)
    logp = nn.log_softmax(logits, axis=-1)
    return -fnp.mean(fnp.take_along_axis(logp, targets[..., None], axis=-1))


def make_train_step(optimizer, data, batch, seq_len):
    """A jitted step: samples ``batch`` windows of ``data`` from ``key``, one AdamW update."""
    n_starts = data.shape[0] - seq_len - 1
    offsets = fnp.arange(seq_len + 1)

    @functrax.jit
    def train_step(model, opt_state, data, key):
        starts = random.randint(key, (batch,), 0, n_starts)
        windows = fnp.take(data, starts[:, None] + offsets[None, :], axis=0)
        loss, grads = functrax.value_and_grad(loss_fn)(model, windows)
        updates, opt_state = optimizer.update(grads, opt_state, model)
        return optim.apply_updates(model, updates), opt_state, loss

    return train_step


# -------------------------------------------------------------------------- sampling


def make_sampler(seq_len):
    """A jitted one-step sampler on a fixed window: ``(model, window (seq_len,), pos, key,
    temperature) -> next id``, drawn from the logits at position ``pos`` of the window."""

    @functrax.jit
    def next_token(model, window, pos, key, temperature):
        logits = model(window)
        row = fnp.take(logits, pos, axis=0)
        return random.categorical(key, row / temperature)

    return next_token


def generate(model, vocab, prompt, n_chars, key, *, temperature=0.8):
    """``prompt`` followed by ``n_chars`` sampled characters. The context is the last
    ``seq_len`` characters, left-aligned in a window of ``seq_len`` (padded at the end with
    id 0, which the causal mask keeps from mattering)."""
    seq_len = model.max_len
    step = make_sampler(seq_len)
    ids = list(vocab.encode(prompt))
    temp = np.float32(temperature)
    for key in random.split(key, n_chars):
        ctx = ids[-seq_len:]
        window = np.zeros(seq_len, np.int32)
        window[:len(ctx)] = ctx
        ids.append(int(step(model, window, np.int32(len(ctx) - 1), key, temp)))
    return vocab.decode(ids)


# -------------------------------------------------------------------------- progress


class _PlainBar:
    """Plain prints when tqdm is not installed."""

    def __init__(self, total, desc):
        self.total, self.n, self.desc, self.postfix = total, 0, desc, ""

    def update(self, n=1):
        self.n += n
        if self.n == self.total or self.n % max(1, self.total // 10) == 0:
            print(f"{self.desc}: {self.n}/{self.total} {self.postfix}", file=sys.stderr,
                  flush=True)

    def set_postfix_str(self, text, refresh=True):
        self.postfix = text

    def write(self, text, file=None):
        print(text, file=file or sys.stdout, flush=True)

    def close(self):
        pass


def progress_bar(total, desc):
    try:
        from tqdm import tqdm
    except ImportError:
        return _PlainBar(total, desc)
    return tqdm(total=total, desc=desc, file=sys.stderr, dynamic_ncols=True, mininterval=0.5)


# ------------------------------------------------------------------------------ main


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=1500, help="training steps")
    p.add_argument("--batch", type=int, default=32, help="windows per step")
    p.add_argument("--seq-len", type=int, default=64, help="characters per window")
    p.add_argument("--d-model", type=int, default=64)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--lr", type=float, default=3e-3, help="peak AdamW learning rate")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--sample-chars", type=int, default=300,
                   help="characters to generate after training (0: none)")
    p.add_argument("--temperature", type=float, default=0.8)
    p.add_argument("--log-every", type=int, default=50, help="steps between loss records")
    p.add_argument("--blas-threads", type=int, default=1,
                   help="OpenBLAS threads (0: the library default); read before numpy loads")
    p.add_argument("--workdir", default=None,
                   help="optional run directory: config, metrics.jsonl, final checkpoint")
    args = p.parse_args(argv)
    for name in ("steps", "batch", "seq_len", "d_model", "layers", "heads", "log_every"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")
    if args.d_model % args.heads:
        p.error(f"--d-model ({args.d_model}) must be a multiple of --heads ({args.heads})")
    if args.sample_chars < 0 or args.temperature <= 0 or args.lr <= 0:
        p.error("--sample-chars must be >= 0, --temperature and --lr > 0")
    return args


def main(argv=None):
    args = parse_args(argv)
    if hasattr(sys.stdout, "reconfigure"):  # the text and samples may hold non-ASCII
        sys.stdout.reconfigure(errors="backslashreplace")
    text, files = load_text()
    vocab = Vocab(text)
    data = fnp.asarray(vocab.encode(text))
    print(f"text: {len(text):,} characters of the standard library's {', '.join(files)}; "
          f"vocabulary {len(vocab)} characters (ln {len(vocab)} = {math.log(len(vocab)):.3f})")

    model = make_model(len(vocab), seq_len=args.seq_len, d_model=args.d_model,
                       layers=args.layers, heads=args.heads, seed=args.seed)
    warmup = max(1, min(100, args.steps // 10))
    schedule = optim.warmup_cosine_decay_schedule(0.0, args.lr, warmup, max(args.steps, warmup + 1),
                                                  end_value=args.lr * 0.1)
    optimizer = optim.chain(optim.clip_by_global_norm(1.0),
                            optim.adamw(schedule, b2=0.99, weight_decay=0.01))
    opt_state = optimizer.init(model)
    train_step = make_train_step(optimizer, data, args.batch, args.seq_len)
    print(f"model: {args.layers} layers, d_model {args.d_model}, {args.heads} heads, "
          f"seq_len {args.seq_len}, {nn.count_params(model):,} parameters; batch "
          f"{args.batch}, {args.steps} steps")

    run = log = None
    if args.workdir:
        from functrax.training import MetricsLogger, RunDirectory
        config = dict(vars(args), vocab_size=len(vocab), files=files)
        run = RunDirectory(args.workdir, config=config)
        log = MetricsLogger(run, tensorboard=False)

    key = random.key(args.seed + 1)
    bar = progress_bar(args.steps, "train")
    t0 = time.perf_counter()
    first_loss = loss = None
    compile_s = None
    recent = []
    half = args.steps // 2  # steady-state timing over the second half
    t_half = None
    for step in range(1, args.steps + 1):
        if step == half + 1:
            t_half = time.perf_counter()
        key, sub = random.split(key)
        model, opt_state, loss = train_step(model, opt_state, data, sub)
        loss_f = float(loss)
        if not math.isfinite(loss_f):
            raise SystemExit(f"non-finite loss {loss_f} at step {step}")
        if step == 1:
            first_loss = loss_f
            compile_s = time.perf_counter() - t0
            bar.write(f"step {step:5d}/{args.steps}  loss {loss_f:.4f}  (first step, with "
                      f"compilation: {compile_s:.1f} s)", file=sys.stdout)
        recent.append(loss_f)
        bar.update(1)
        if step % 10 == 0 or step == args.steps:
            bar.set_postfix_str(f"loss {np.mean(recent[-10:]):.4f}")
        if log is not None and (step % args.log_every == 0 or step in (1, args.steps)):
            log.log(step, loss=loss_f)
    bar.close()
    elapsed = time.perf_counter() - t0
    if t_half is not None and args.steps - half >= 1:
        per_step = (time.perf_counter() - t_half) / (args.steps - half)
    else:
        per_step = (elapsed - compile_s) / max(1, args.steps - 1)
    end_loss = float(np.mean(recent[-min(20, len(recent)):]))
    print(f"step {args.steps:5d}/{args.steps}  loss {loss_f:.4f}  (mean of the last "
          f"{min(20, len(recent))} steps: {end_loss:.4f})")
    print(f"loss: start {first_loss:.4f} -> end {end_loss:.4f} · {args.steps} steps in "
          f"{elapsed:.1f} s ({1000 * per_step:.1f} ms/step over the second half; first "
          f"step {compile_s:.1f} s)", flush=True)

    if run is not None:
        from functrax.training import save_checkpoint
        log.close()
        path = os.path.join(run.checkpoints, f"step_{args.steps}")
        if os.path.exists(path):
            print(f"checkpoint: {path} exists already (an earlier run): not overwritten")
        else:
            # restore with restore_checkpoint(path, target=make_model(len(vocab), ...))
            meta = {"vocab": "".join(vocab.chars), "seq_len": args.seq_len,
                    "d_model": args.d_model, "layers": args.layers, "heads": args.heads}
            save_checkpoint(path, model, step=args.steps, metadata=meta)
            print(f"checkpoint: {path}")
        print(f"run directory: {run.path} (config.json, metrics.jsonl, checkpoints/)")

    if args.sample_chars:
        t1 = time.perf_counter()
        sample = generate(model, vocab, PROMPT, args.sample_chars, random.key(args.seed + 2),
                          temperature=args.temperature)
        print(f"sample (temperature {args.temperature}, {args.sample_chars} characters in "
              f"{time.perf_counter() - t1:.1f} s):")
        print("-" * 60)
        print(sample)
        print("-" * 60)
    return 0


if __name__ == "__main__":
    sys.exit(main())
