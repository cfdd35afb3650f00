"""``DataLoader``: deterministic, resumable mini-batches over in-memory or memory-mapped arrays.

The design follows Grain (a data pipeline whose order is a pure function of the seed, the
epoch and the position, so a run resumes bit for bit from a small state), with tf.data's and
PyTorch's background prefetch:

- The order of epoch ``e`` is ``functrax.random.permutation(functrax.random.fold_in(key, e),
  n)``: reproducible in any process, and independent of how far earlier epochs went.
- :meth:`DataLoader.state` is a small JSON-serializable dict (epoch, position, and what
  identifies the configuration); :meth:`DataLoader.restore` continues exactly there. The
  state counts the batches handed to the caller, never the batches prefetched.
- A daemon thread gathers the next ``prefetch`` batches (numpy fancy indexing, which reads
  only the selected rows of a ``np.memmap``) into a bounded queue. It stops when its iterator
  is exhausted, closed or dropped; an exception in it is re-raised in the caller.
"""
from __future__ import annotations

import hashlib
import queue
import threading
import weakref
from collections.abc import Mapping

import numpy as np

from functrax import random as _random
from functrax.random.keys import check_prng_key
from functrax.tree_util import keystr, tree_flatten_with_path, tree_unflatten

__all__ = ["DataLoader", "DataLoaderIterator"]

_STATE_VERSION = 1
# the state's fields that decide which examples a (epoch, position) names
_CONFIG_FIELDS = ("num_examples", "batch_size", "shuffle", "drop_remainder", "key_fingerprint")
_POLL_S = 0.1  # how often a blocked prefetch thread looks at its stop flag


# --- argument checks ---


def _positive_int(name, value, *, minimum=1):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"DataLoader: {name} must be an integer, got {value!r} "
                        f"({type(value).__name__})")
    if value < minimum:
        raise ValueError(f"DataLoader: {name} must be >= {minimum}, got {value}")
    return int(value)


def _leaves_and_size(data):
    """``(leaves, treedef, n)``; every leaf a numpy array with the same leading dimension."""
    with_path, treedef = tree_flatten_with_path(data)
    if not with_path:
        raise ValueError("DataLoader: `data` has no array leaves; pass a pytree (dict, tuple, "
                         "list) of numpy arrays or np.memmaps with one row per example")
    leaves = []
    for path, leaf in with_path:
        arr = leaf if isinstance(leaf, np.ndarray) else np.asarray(leaf)
        if arr.ndim == 0:
            raise ValueError(f"DataLoader: leaf {keystr(path) or '<root>'} of `data` is a "
                             f"scalar ({arr!r}); every leaf needs a leading axis over the "
                             "examples")
        leaves.append(arr)
    sizes = {keystr(p) or "<root>": a.shape[0] for (p, _), a in zip(with_path, leaves)}
    if len(set(sizes.values())) > 1:
        listing = ", ".join(f"{p}: {s}" for p, s in sizes.items())
        raise ValueError("DataLoader: the leaves of `data` must share their leading dimension "
                         f"(the number of examples), got {listing}. Make the first axis of "
                         "every leaf index the same examples.")
    if leaves[0].shape[0] == 0:
        raise ValueError(f"DataLoader: `data` has no examples (leading dimension 0: "
                         f"{', '.join(sizes)})")
    return leaves, treedef, leaves[0].shape[0]


def _single_key(key, seed):
    """The loader's typed key from ``key`` or ``seed`` (or None)."""
    if key is not None and seed is not None:
        raise ValueError("DataLoader: pass key= or seed=, not both")
    if seed is not None:
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
            raise TypeError(f"DataLoader: seed must be an integer, got {seed!r}; or pass "
                            "key=functrax.random.key(...)")
        return _random.key(int(seed))
    if key is None:
        return None
    try:
        typed, _ = check_prng_key("DataLoader", key)
    except (TypeError, ValueError) as e:
        raise type(e)("DataLoader: key must be one functrax PRNG key (functrax.random.key(s) "
                      f"or functrax.random.PRNGKey(s)), got {type(key).__name__} of shape "
                      f"{np.shape(key)}: {e}") from e
    return typed


def _fingerprint(typed_key) -> str | None:
    """A short stable hash of the key's implementation and bits (typed or raw: the same)."""
    if typed_key is None:
        return None
    bits = np.asarray(_random.key_data(typed_key)).astype("<u4").tobytes()
    return hashlib.sha256(str(typed_key.dtype).encode() + b":" + bits).hexdigest()[:16]


# --- batches ---


class _Batcher:
    """Gathers batch ``pos`` of one epoch; holds no reference to a loader or an iterator (so
    the prefetch thread keeps neither alive)."""

    def __init__(self, leaves, treedef, order, batch_size, n, num_devices):
        self.leaves, self.treedef, self.order = leaves, treedef, order
        self.batch_size, self.n, self.num_devices = batch_size, n, num_devices

    def batch(self, pos):
        start, stop = pos * self.batch_size, min((pos + 1) * self.batch_size, self.n)
        if self.order is None:  # natural order: a copy of a slice (never a view of a memmap)
            parts = [np.array(leaf[start:stop]) for leaf in self.leaves]
        else:
            idx = self.order[start:stop]
            parts = [np.asarray(leaf[idx]) for leaf in self.leaves]
        if self.num_devices:
            d = self.num_devices
            parts = [p.reshape((d, p.shape[0] // d) + p.shape[1:]) for p in parts]
        return tree_unflatten(self.treedef, parts)


class _Failure:
    def __init__(self, pos, exc):
        self.pos, self.exc = pos, exc


_DONE = object()


def _put(q, item, stop) -> bool:
    """Put ``item`` unless ``stop`` is set first; whether it was put."""
    while not stop.is_set():
        try:
            q.put(item, timeout=_POLL_S)
            return True
        except queue.Full:
            pass
    return False


def _prefetch(batcher, positions, q, stop):
    """The prefetch thread: batches ``positions`` in order into ``q``, then ``_DONE``."""
    pos = None
    try:
        for pos in positions:
            if stop.is_set() or not _put(q, (pos, batcher.batch(pos)), stop):
                return
    except BaseException as e:  # re-raised in the consumer's thread
        _put(q, _Failure(pos, e), stop)
        return
    _put(q, _DONE, stop)


class DataLoaderIterator:
    """The batches left in one epoch of a :class:`DataLoader` (made by ``iter(loader)``).

    Each ``next`` hands out one batch and records it in the loader's state; after the last
    batch of the epoch the loader is at the next epoch. ``close()`` (or leaving a ``with``
    block, or dropping the iterator) stops its prefetch thread; a closed iterator is
    exhausted.
    """

    def __init__(self, loader, batcher, epoch, start, stop, prefetch):
        self._loader, self._batcher = loader, batcher
        self._epoch, self._pos, self._stop_pos = epoch, start, stop
        self._closed, self._thread = False, None
        if prefetch and start < stop:
            self._queue = queue.Queue(maxsize=prefetch)
            self._stop = threading.Event()
            self._thread = threading.Thread(
                target=_prefetch, args=(batcher, range(start, stop), self._queue, self._stop),
                name=f"functrax-DataLoader-prefetch-epoch{epoch}", daemon=True)
            self._thread.start()

    def __iter__(self):
        return self

    def __next__(self):
        if self._closed or self._pos >= self._stop_pos:
            self.close()
            raise StopIteration
        pos = self._pos
        batch = self._batcher.batch(pos) if self._thread is None else self._take(pos)
        self._pos += 1
        self._loader._consumed(self._epoch, pos)
        if self._pos >= self._stop_pos:
            self.close()
        return batch

    def _take(self, pos):
        while True:
            try:
                item = self._queue.get(timeout=_POLL_S)
                break
            except queue.Empty:
                if not self._thread.is_alive() and self._queue.empty():
                    self.close()
                    raise RuntimeError(f"DataLoader: the prefetch thread of epoch {self._epoch} "
                                       f"ended before batch {pos}") from None
        if isinstance(item, _Failure):
            self.close()
            exc = item.exc
            if hasattr(exc, "add_note"):
                exc.add_note(f"(raised in the DataLoader prefetch thread while gathering batch "
                             f"{item.pos} of epoch {self._epoch})")
            raise exc
        got, batch = item
        assert got == pos, (got, pos)  # the thread produces positions in order
        return batch

    def close(self):
        """Stops the prefetch thread (and waits for it); the iterator is then exhausted."""
        self._closed = True
        thread, self._thread = self._thread, None
        if thread is None:
            return
        self._stop.set()
        while True:  # unblock a thread waiting on a full queue
            try:
                self._queue.get_nowait()
            except queue.Empty:
                break
        if thread is not threading.current_thread():
            thread.join(timeout=10.0)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown: nothing left to stop
            pass


# --- the loader ---


class DataLoader:
    """Mini-batches of a pytree of arrays, shuffled per epoch, resumable, prefetched.

    Args:
      data: a pytree (dict, tuple, list, ...) of numpy arrays or ``np.memmap`` s whose leading
        dimensions are equal (the number of examples ``n``).
      batch_size: examples per batch.
      key: a functrax PRNG key (typed, from ``functrax.random.key``, or raw ``uint32[2]`` from
        ``PRNGKey``: the same bits give the same order). Needed when ``shuffle`` is true,
        unless ``seed`` is given.
      seed: an integer, instead of ``key`` (``key=functrax.random.key(seed)``).
      shuffle: shuffle every epoch (the order of epoch ``e`` is
        ``permutation(fold_in(key, e), n)``); ``False`` keeps the natural order.
      drop_remainder: drop the last ``n % batch_size`` examples of each epoch's order
        (``True``), or yield them as a final smaller batch (``False``).
      prefetch: batches gathered ahead by a background thread; 0 gathers in the caller's
        thread.
      num_devices: reshape every batch leaf to ``(num_devices, batch_size // num_devices,
        ...)`` for ``functrax.pmap``.

    Attributes:
      epoch: the current epoch (starting at 0).
      position: batches of the current epoch already handed out.
      batches_per_epoch: batches in one epoch (also ``len(loader)``).
      num_examples: ``n``.

    Raises:
      ValueError: leaves with different leading dimensions (the message lists their paths
        and sizes), a batch size larger than ``n`` with ``drop_remainder``, ``batch_size``
        (or the last batch) not divisible by ``num_devices``, ``shuffle`` without a key.
      TypeError: a key that is not one PRNG key, non-integer sizes.

    >>> import numpy as np
    >>> loader = DataLoader({"x": np.arange(10), "y": np.arange(10) * 2}, 4, seed=0)
    >>> len(loader), loader.epoch
    (2, 0)
    >>> [b["x"].tolist() for b in loader]
    [[0, 8, 2, 4], [1, 7, 9, 5]]
    >>> loader.epoch, loader.state()["position"]
    (1, 0)
    >>> [b.tolist() for b in DataLoader(np.arange(5), 2, shuffle=False,
    ...                                drop_remainder=False)]
    [[0, 1], [2, 3], [4]]
    """

    def __init__(self, data, batch_size, *, key=None, seed=None, shuffle=True,
                 drop_remainder=True, prefetch=2, num_devices=None):
        self._leaves, self._treedef, self.num_examples = _leaves_and_size(data)
        self.batch_size = _positive_int("batch_size", batch_size)
        self.prefetch = _positive_int("prefetch", prefetch, minimum=0)
        self.shuffle, self.drop_remainder = bool(shuffle), bool(drop_remainder)
        self._key = _single_key(key, seed)
        if self.shuffle and self._key is None:
            raise ValueError("DataLoader: shuffle=True needs key=functrax.random.key(...) or "
                             "seed=<int> (the order of each epoch is derived from it); or pass "
                             "shuffle=False")
        self._fingerprint = _fingerprint(self._key) if self.shuffle else None
        n, bs = self.num_examples, self.batch_size
        if self.drop_remainder and bs > n:
            raise ValueError(f"DataLoader: batch_size={bs} is larger than the number of "
                             f"examples ({n}); with drop_remainder=True no batch would be "
                             "yielded. Lower batch_size or pass drop_remainder=False.")
        self.batches_per_epoch = n // bs if self.drop_remainder else -(-n // bs)
        self.num_devices = None if num_devices is None else _positive_int(
            "num_devices", num_devices)
        self._check_devices()
        self.epoch, self.position = 0, 0
        self._orders = {}  # epoch -> its order (the last one or two epochs)
        self._active = None  # weakref to the live iterator

    def _check_devices(self):
        d, bs = self.num_devices, self.batch_size
        if d is None:
            return
        if bs % d:
            raise ValueError(f"DataLoader: batch_size={bs} is not divisible by num_devices={d}; "
                             f"each device gets batch_size // num_devices examples. Use a "
                             f"batch size that is a multiple of {d}.")
        last = self.num_examples % bs
        if not self.drop_remainder and last % d:
            raise ValueError(f"DataLoader: with drop_remainder=False the last batch of each "
                             f"epoch has {last} examples ({self.num_examples} % {bs}), not "
                             f"divisible by num_devices={d}. Pass drop_remainder=True.")

    def __len__(self):
        return self.batches_per_epoch

    def order(self, epoch: int) -> np.ndarray | None:
        """The example indices of ``epoch`` in order (``None`` without shuffling: natural
        order). ``permutation(fold_in(key, epoch), n)`` as int64.

        >>> DataLoader(np.zeros((5, 1)), 5, seed=1).order(0).tolist()
        [1, 2, 4, 3, 0]
        """
        if not self.shuffle:
            return None
        if epoch not in self._orders:
            perm = _random.permutation(_random.fold_in(self._key, int(epoch)),
                                       self.num_examples)
            self._orders = {e: o for e, o in self._orders.items() if e == epoch - 1}
            self._orders[epoch] = np.asarray(perm).astype(np.int64)
        return self._orders[epoch]

    def __iter__(self) -> DataLoaderIterator:
        """The batches left in the current epoch (an earlier live iterator is closed)."""
        self._close_active()
        batcher = _Batcher(self._leaves, self._treedef, self.order(self.epoch),
                           self.batch_size, self.num_examples, self.num_devices)
        it = DataLoaderIterator(self, batcher, self.epoch, self.position,
                                self.batches_per_epoch, self.prefetch)
        self._active = weakref.ref(it)
        return it

    def _consumed(self, epoch, pos):
        """Records that batch ``pos`` of ``epoch`` was handed out."""
        assert (epoch, pos) == (self.epoch, self.position), ((epoch, pos), self.state())
        self.position += 1
        if self.position >= self.batches_per_epoch:
            self.epoch, self.position = self.epoch + 1, 0

    def _close_active(self):
        it = self._active() if self._active is not None else None
        self._active = None
        if it is not None:
            it.close()

    def close(self):
        """Closes the live iterator (stopping its prefetch thread)."""
        self._close_active()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # --- resuming ---

    def state(self) -> dict:
        """A JSON-serializable snapshot: where the loader is and what it iterates.

        Returns:
          ``{"version", "epoch", "position", "num_examples", "batch_size", "shuffle",
          "drop_remainder", "key_fingerprint"}``; ``position`` counts the batches of
          ``epoch`` handed to the caller (prefetched ones are not counted).

        >>> loader = DataLoader(np.arange(10), 2, shuffle=False)
        >>> _ = next(iter(loader))
        >>> {k: loader.state()[k] for k in ("epoch", "position")}
        {'epoch': 0, 'position': 1}
        """
        return {"version": _STATE_VERSION, "epoch": self.epoch, "position": self.position,
                **self._config()}

    def _config(self):
        return {"num_examples": self.num_examples, "batch_size": self.batch_size,
                "shuffle": self.shuffle, "drop_remainder": self.drop_remainder,
                "key_fingerprint": self._fingerprint}

    def restore(self, state: Mapping) -> None:
        """Continues from ``state`` (from :meth:`state`, possibly through JSON): the next
        batch is the one an uninterrupted loader would have yielded next. A live iterator is
        closed.

        Args:
          state: the dict returned by :meth:`state`.
        Raises:
          ValueError: a state of another configuration (data size, batch size, shuffling,
            remainder policy or key; the message lists the differences), a malformed state,
            or a position outside the epoch.

        >>> a = DataLoader(np.arange(10), 2, seed=0)
        >>> _ = next(iter(a))
        >>> b = DataLoader(np.arange(10), 2, seed=0)
        >>> b.restore(a.state())
        >>> next(iter(b)).tolist() == next(iter(a)).tolist()
        True
        """
        if not isinstance(state, Mapping):
            raise TypeError(f"DataLoader.restore: state must be the dict from "
                            f"DataLoader.state(), got {type(state).__name__}")
        missing = [k for k in ("version", "epoch", "position", *_CONFIG_FIELDS)
                   if k not in state]
        if missing:
            raise ValueError(f"DataLoader.restore: state lacks {missing}; pass the dict "
                             "returned by DataLoader.state()")
        if state["version"] != _STATE_VERSION:
            raise ValueError(f"DataLoader.restore: state version {state['version']!r} is not "
                             f"supported (this loader writes version {_STATE_VERSION})")
        mine = self._config()
        diff = [f"{k}: saved {state[k]!r}, this loader {mine[k]!r}"
                for k in _CONFIG_FIELDS if state[k] != mine[k]]
        if diff:
            raise ValueError("DataLoader.restore: the state comes from a loader with another "
                             "configuration (" + "; ".join(diff) + "). Build the loader with "
                             "the same data size, batch_size, shuffle, drop_remainder and key "
                             "as the saved run.")
        epoch, pos = state["epoch"], state["position"]
        if not (isinstance(epoch, int) and isinstance(pos, int) and epoch >= 0
                and 0 <= pos < self.batches_per_epoch):
            raise ValueError(f"DataLoader.restore: epoch={epoch!r}, position={pos!r} is not a "
                             f"place in this loader (epoch >= 0, 0 <= position < "
                             f"{self.batches_per_epoch})")
        self._close_active()
        self.epoch, self.position = epoch, pos

    def __repr__(self):
        return (f"DataLoader(n={self.num_examples}, batch_size={self.batch_size}, "
                f"shuffle={self.shuffle}, drop_remainder={self.drop_remainder}, "
                f"epoch={self.epoch}, position={self.position})")
