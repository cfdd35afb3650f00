"""Peak memory of ``vmap`` with and without ``chunk_size``, measured with ``tracemalloc``.

Run with ``python benchmarks/vmap_chunk_memory.py [--batch B] [--dim D] [--chunk C]``.

The mapped function builds a ``D x D`` intermediate per example
(``sum(tanh(outer(x, x)) ** 2)``), so an unchunked ``vmap`` over ``B`` examples (default
4096, ``D`` 32) materializes ``B x D x D`` float32 arrays at once, while ``chunk_size=C``
(default 256) only holds ``C x D x D`` at a time. numpy allocations are traced by
``tracemalloc``; for each variant the script prints the peak bytes allocated above what was
live before the call, then the ratio (unchunked / chunked). It first checks that both give
the same result. This is a report, not a test.
"""
import argparse
import tracemalloc

import numpy as np

import functrax
import functrax.numpy as fnp


def per_example(x):
    """A scalar from a ``D x D`` intermediate (big per-example temporaries)."""
    return fnp.sum(fnp.tanh(fnp.outer(x, x)) ** 2)


def peak_bytes(fn):
    """Peak traced bytes allocated by ``fn()`` above what was live before it."""
    fn()  # warm up caches so they are not counted
    tracemalloc.start()
    try:
        before, _ = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        out = fn()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak - before, out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=4096, help="examples")
    parser.add_argument("--dim", type=int, default=32, help="per-example vector length D")
    parser.add_argument("--chunk", type=int, default=256, help="chunk_size for the chunked run")
    args = parser.parse_args(argv)

    xs = fnp.asarray(np.random.RandomState(0).randn(args.batch, args.dim).astype(np.float32))
    full = functrax.vmap(per_example)
    chunked = functrax.vmap(per_example, chunk_size=args.chunk)

    peak_full, out_full = peak_bytes(lambda: full(xs))
    peak_chunked, out_chunked = peak_bytes(lambda: chunked(xs))
    if not np.allclose(np.asarray(out_full), np.asarray(out_chunked), rtol=1e-6, atol=1e-6):
        raise AssertionError("chunked and unchunked vmap disagree")

    one = args.batch * args.dim * args.dim * 4
    print(f"vmap of sum(tanh(outer(x, x)) ** 2), batch {args.batch}, D {args.dim} "
          f"(one B x D x D float32 intermediate: {one:,} bytes)")
    print(f"{'peak without chunk_size:':<34}{peak_full:>14,} bytes")
    print(f"{f'peak with chunk_size={args.chunk}:':<34}{peak_chunked:>14,} bytes")
    ratio = peak_full / peak_chunked
    print(f"{'ratio unchunked / chunked:':<34}{ratio:>14.1f}x "
          f"({'chunked lower' if peak_chunked < peak_full else 'chunked NOT lower'})")


if __name__ == "__main__":
    main()
