"""functrax.training.data.DataLoader: exact batches, determinism across processes, coverage of
every example, resuming from a JSON state, prefetch, memmaps, pmap sharding and errors."""
import gc
import json
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

from functrax import random
from functrax.training.data import DataLoader

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _data(n=23):
    return {"x": np.arange(n * 3, dtype=np.float32).reshape(n, 3), "y": np.arange(n) * 10}


def _order(key, epoch, n):
    return np.asarray(random.permutation(random.fold_in(key, epoch), n))


def _take(loader, m):
    """``m`` batches from ``loader``, crossing epochs as a training loop does."""
    out = []
    while len(out) < m:
        before = len(out)
        for b in loader:
            out.append(b)
            if len(out) == m:
                break
        assert len(out) > before, f"an iteration of {loader!r} yielded no batch"
    return out


def _prefetch_threads():
    return [t for t in threading.enumerate()
            if t.name.startswith("functrax-DataLoader-prefetch") and t.is_alive()]


def _assert_same_batches(a, b):
    assert len(a) == len(b)
    for i, (u, v) in enumerate(zip(a, b)):
        assert sorted(u) == sorted(v), i
        for k in u:
            np.testing.assert_array_equal(u[k], v[k], err_msg=f"batch {i}, leaf {k}")


# --- exact batches ---


@pytest.mark.parametrize("prefetch", [0, 2])
def test_shuffled_batches_follow_fold_in_permutation(prefetch):
    data, key = _data(), random.key(42)
    loader = DataLoader(data, 5, key=key, prefetch=prefetch)
    assert (len(loader), loader.batches_per_epoch, loader.epoch) == (4, 4, 0)
    for epoch in range(3):
        order = _order(key, epoch, 23)
        batches = list(loader)
        assert len(batches) == 4 and loader.epoch == epoch + 1
        for i, b in enumerate(batches):
            idx = order[i * 5:(i + 1) * 5]
            np.testing.assert_array_equal(b["x"], data["x"][idx])
            np.testing.assert_array_equal(b["y"], data["y"][idx])
            assert b["x"].dtype == np.float32 and b["x"].shape == (5, 3)
    # epochs differ from one another
    assert not np.array_equal(_order(key, 0, 23), _order(key, 1, 23))


def test_natural_order_without_shuffle():
    data = _data(10)
    batches = list(DataLoader(data, 4, shuffle=False))
    assert [b["y"].tolist() for b in batches] == [[0, 10, 20, 30], [40, 50, 60, 70]]
    batches = list(DataLoader(data, 4, shuffle=False, drop_remainder=False))
    assert [b["y"].tolist() for b in batches] == [[0, 10, 20, 30], [40, 50, 60, 70], [80, 90]]
    np.testing.assert_array_equal(batches[2]["x"], data["x"][8:10])


def test_structure_is_kept_tuple_and_list():
    x, y = np.arange(6), np.arange(6) + 100
    (b,) = list(DataLoader((x, [y]), 6, shuffle=False))
    assert isinstance(b, tuple) and isinstance(b[1], list)
    np.testing.assert_array_equal(b[1][0], y)


def test_seed_typed_key_and_raw_key_agree():
    data = _data()
    by_seed = list(DataLoader(data, 4, seed=7))
    by_key = list(DataLoader(data, 4, key=random.key(7)))
    by_raw = list(DataLoader(data, 4, key=random.PRNGKey(7)))
    _assert_same_batches(by_seed, by_key)
    _assert_same_batches(by_seed, by_raw)
    other = list(DataLoader(data, 4, seed=8))
    assert any(not np.array_equal(a["y"], b["y"]) for a, b in zip(by_seed, other))


_SCRIPT = """
import json, sys
import numpy as np
from functrax.training.data import DataLoader
loader = DataLoader(np.arange(50), 8, seed=int(sys.argv[1]))
print(json.dumps([[b.tolist() for b in loader] for _ in range(2)]))
"""


def _in_process(seed):
    loader = DataLoader(np.arange(50), 8, seed=seed)
    return [[b.tolist() for b in loader] for _ in range(2)]


def test_same_key_same_order_in_another_process():
    env = dict(os.environ, FUNCTRAX_CPU_BACKEND="numpy")
    out = subprocess.run([sys.executable, "-c", _SCRIPT, "3"], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=300, check=True).stdout
    theirs = json.loads(out.strip().splitlines()[-1])
    assert theirs == _in_process(3)
    assert theirs != _in_process(4)


# --- coverage of the examples ---


@pytest.mark.parametrize("n,bs", [(23, 5), (20, 5), (7, 10)])
def test_every_example_once_per_epoch_without_drop(n, bs):
    loader = DataLoader(np.arange(n), bs, seed=1, drop_remainder=False)
    assert len(loader) == -(-n // bs)
    for _ in range(2):
        batches = list(loader)
        assert [len(b) for b in batches[:-1]] == [bs] * (len(batches) - 1)
        assert len(batches[-1]) == n - bs * (len(batches) - 1)
        assert sorted(np.concatenate(batches).tolist()) == list(range(n))


def test_drop_remainder_drops_the_tail_of_the_order():
    key = random.key(5)
    loader = DataLoader(np.arange(23), 5, key=key)
    seen = np.concatenate(list(loader))
    order = _order(key, 0, 23)
    np.testing.assert_array_equal(seen, order[:20])
    assert sorted(set(range(23)) - set(seen.tolist())) == sorted(order[20:].tolist())


# --- resuming ---


@pytest.mark.parametrize("k", [0, 1, 3, 4, 5, 9])  # 4 batches per epoch: 4, 5, 9 cross epochs
@pytest.mark.parametrize("drop", [True, False])
def test_restore_continues_exactly(k, drop):
    data, total = _data(), 13
    ref = _take(DataLoader(data, 6, seed=11, drop_remainder=drop), total)
    first = DataLoader(data, 6, seed=11, drop_remainder=drop, prefetch=3)
    got = _take(first, k)
    state = json.loads(json.dumps(first.state()))
    first.close()
    second = DataLoader(data, 6, key=random.key(11), drop_remainder=drop, prefetch=1)
    second.restore(state)
    assert (second.epoch, second.state()["position"]) == (state["epoch"], state["position"])
    got += _take(second, total - k)
    _assert_same_batches(got, ref)


def test_state_counts_consumed_batches_not_prefetched():
    loader = DataLoader(_data(), 2, seed=0, prefetch=4)
    it = iter(loader)
    next(it)
    assert loader.state()["position"] == 1
    next(it)
    assert loader.state()["position"] == 2
    it.close()
    assert loader.state()["position"] == 2  # closing forgets what was prefetched
    b = next(iter(loader))
    np.testing.assert_array_equal(b["y"], _data()["y"][_order(random.key(0), 0, 23)[4:6]])


def test_state_contents_and_epoch_boundary():
    loader = DataLoader(np.arange(10), 5, seed=2)
    s = loader.state()
    assert json.loads(json.dumps(s)) == s
    assert {k: s[k] for k in ("epoch", "position", "num_examples", "batch_size")} == {
        "epoch": 0, "position": 0, "num_examples": 10, "batch_size": 5}
    assert isinstance(s["key_fingerprint"], str)
    _take(loader, 2)  # the whole epoch: the loader is at the next one
    assert (loader.state()["epoch"], loader.state()["position"]) == (1, 0)
    assert loader.epoch == 1


@pytest.mark.parametrize("change,field", [
    (dict(batch_size=4), "batch_size"), (dict(seed=3), "key_fingerprint"),
    (dict(drop_remainder=False), "drop_remainder"), (dict(shuffle=False), "shuffle"),
])
def test_restore_from_another_configuration_raises(change, field):
    base = dict(batch_size=5, seed=2)
    state = DataLoader(np.arange(20), **base).state()
    kw = {**base, **change}
    if kw.get("shuffle") is False:
        kw.pop("seed")
    other = DataLoader(np.arange(20), **kw)
    with pytest.raises(ValueError, match=f"another configuration.*{field}: saved"):
        other.restore(state)
    with pytest.raises(ValueError, match="num_examples: saved 20, this loader 21"):
        DataLoader(np.arange(21), **base).restore(state)


def test_restore_rejects_malformed_states():
    loader = DataLoader(np.arange(20), 5, seed=2)
    with pytest.raises(ValueError, match=r"lacks \['position'\]"):
        loader.restore({k: v for k, v in loader.state().items() if k != "position"})
    with pytest.raises(ValueError, match="0 <= position < 4"):
        loader.restore({**loader.state(), "position": 4})
    with pytest.raises(TypeError, match="must be the dict"):
        loader.restore("epoch=0")


# --- prefetch ---


@pytest.mark.parametrize("shuffle", [True, False])
def test_prefetch_on_and_off_give_the_same_batches(shuffle):
    kw = dict(seed=9) if shuffle else dict(shuffle=False)
    runs = [_take(DataLoader(_data(), 3, drop_remainder=False, prefetch=p, **kw), 20)
            for p in (0, 1, 5)]
    _assert_same_batches(runs[0], runs[1])
    _assert_same_batches(runs[0], runs[2])


def test_prefetch_thread_stops_when_closed_or_dropped():
    loader = DataLoader(_data(200), 2, seed=0, prefetch=2)
    it = iter(loader)
    next(it)
    assert len(_prefetch_threads()) == 1
    it.close()
    assert _prefetch_threads() == []
    with pytest.raises(StopIteration):
        next(it)
    it = iter(loader)
    next(it)
    del it
    gc.collect()
    assert _prefetch_threads() == []
    for _ in loader:  # break out of a for loop
        break
    gc.collect()
    assert _prefetch_threads() == []
    with DataLoader(_data(200), 2, seed=0) as ctx:
        it = iter(ctx)
        next(it)
    assert _prefetch_threads() == []
    with iter(loader) as it:
        next(it)
    assert _prefetch_threads() == []
    list(loader)  # an exhausted iterator's thread has ended too
    assert _prefetch_threads() == []


def test_a_new_iterator_closes_the_previous_one():
    loader = DataLoader(np.arange(20), 2, shuffle=False)
    a = iter(loader)
    assert next(a).tolist() == [0, 1]
    b = iter(loader)
    with pytest.raises(StopIteration):
        next(a)
    assert next(b).tolist() == [2, 3]


class _FailingRows(np.ndarray):
    """An array whose gathers fail from row 6 on (a disk that goes away)."""

    def __getitem__(self, idx):
        if isinstance(idx, np.ndarray) and idx.max() >= 6:
            raise OSError("disk gone")
        return np.asarray(self)[idx]


@pytest.mark.parametrize("prefetch", [0, 2])
def test_an_error_while_gathering_reaches_the_caller(prefetch):
    rows = np.arange(10).view(_FailingRows)
    it = iter(DataLoader({"x": rows}, 2, key=random.key(0), prefetch=prefetch))
    order = _order(random.key(0), 0, 10)
    first_bad = next(i for i in range(5) if order[2 * i:2 * i + 2].max() >= 6)
    for _ in range(first_bad):
        next(it)
    with pytest.raises(OSError, match="disk gone") as info:
        next(it)
    if prefetch and sys.version_info >= (3, 11):
        assert "prefetch thread" in " ".join(info.value.__notes__)
    assert _prefetch_threads() == []


# --- memmaps and sharding ---


def test_memmap_input(tmp_path):
    data = _data(31)
    path = str(tmp_path / "x.dat")
    mm = np.memmap(path, dtype=np.float32, mode="w+", shape=data["x"].shape)
    mm[:] = data["x"]
    mm.flush()
    del mm
    ro = np.memmap(path, dtype=np.float32, mode="r", shape=data["x"].shape)
    for shuffle in (True, False):
        kw = dict(seed=4) if shuffle else dict(shuffle=False)
        from_disk = list(DataLoader({"x": ro, "y": data["y"]}, 4, drop_remainder=False, **kw))
        in_memory = list(DataLoader(data, 4, drop_remainder=False, **kw))
        _assert_same_batches(from_disk, in_memory)
        assert all(type(b["x"]) is np.ndarray for b in from_disk)  # copies, not views


def test_sharding_for_pmap():
    data = _data(20)
    plain = list(DataLoader(data, 8, seed=1, drop_remainder=False))
    sharded = list(DataLoader(data, 8, seed=1, drop_remainder=False, num_devices=2))
    assert [b["x"].shape for b in sharded] == [(2, 4, 3), (2, 4, 3), (2, 2, 3)]
    assert [b["y"].shape for b in sharded] == [(2, 4), (2, 4), (2, 2)]
    for p, s in zip(plain, sharded):
        np.testing.assert_array_equal(s["x"].reshape(p["x"].shape), p["x"])
        np.testing.assert_array_equal(s["x"][1], p["x"][len(p["x"]) // 2:])


# --- errors ---


def test_mismatched_leading_dimensions_name_the_leaves():
    with pytest.raises(ValueError, match=r"\['x'\]: 10, \['y'\]\[0\]: 10, \['y'\]\[1\]: 9"):
        DataLoader({"x": np.zeros(10), "y": [np.zeros(10), np.zeros(9)]}, 2, seed=0)


def test_argument_errors():
    x = np.arange(12)
    with pytest.raises(ValueError, match="batch_size=8 is not divisible by num_devices=3"):
        DataLoader(x, 8, seed=0, num_devices=3)
    with pytest.raises(ValueError, match="last batch of each epoch has 2 examples.*"
                                         "num_devices=4"):
        DataLoader(np.arange(10), 4, seed=0, num_devices=4, drop_remainder=False)
    with pytest.raises(ValueError, match="shuffle=True needs key="):
        DataLoader(x, 2)
    with pytest.raises(ValueError, match="not both"):
        DataLoader(x, 2, seed=0, key=random.key(0))
    with pytest.raises(ValueError, match="key must be one functrax PRNG key"):
        DataLoader(x, 2, key=random.split(random.key(0), 3))
    with pytest.raises(TypeError, match="key must be one functrax PRNG key"):
        DataLoader(x, 2, key="abc")
    with pytest.raises(ValueError, match="batch_size=13 is larger than the number of examples"):
        DataLoader(x, 13, seed=0)
    with pytest.raises(ValueError, match="batch_size must be >= 1"):
        DataLoader(x, 0, seed=0)
    with pytest.raises(TypeError, match="batch_size must be an integer"):
        DataLoader(x, 2.0, seed=0)
    with pytest.raises(ValueError, match="leaf \\['s'\\] of `data` is a scalar"):
        DataLoader({"s": np.float32(1), "x": x}, 2, seed=0)
    with pytest.raises(ValueError, match="no examples"):
        DataLoader(np.zeros((0, 3)), 2, seed=0, drop_remainder=False)
    assert len(DataLoader(x, 13, seed=0, drop_remainder=False)) == 1
