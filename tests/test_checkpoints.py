"""Training checkpoints (``functrax.training.checkpoints``): the format round-trips bit for
bit, saves are atomic (a process killed mid-save leaves the previous checkpoint as the
latest), restores verify sizes, checksums and the target's shapes/dtypes and never unpickle,
the manager keeps the last N and the best, and asynchronous saves snapshot their data."""
import doctest
import hashlib
import json
import math
import os
import pathlib
import signal
import subprocess
import sys
import textwrap
import threading
from typing import NamedTuple

import ml_dtypes
import numpy as np
import pytest

import functrax
import functrax.numpy as fnp
from functrax import optim, random, tree_util
from functrax.training import (
    CheckpointError, CheckpointManager, read_manifest, restore_checkpoint, save_checkpoint,
)
from functrax.training import checkpoints as ckpt
from functrax.training import checkpoints_format as cfmt
from functrax.training import checkpoints_io as cio
from functrax.training import checkpoints_manager as cmgr

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _bits(x):
    """dtype, shape and raw bytes of an array leaf (typed keys by their data)."""
    if isinstance(x, functrax.Array) and functrax.dtypes.issubdtype(x.dtype,
                                                                    functrax.dtypes.prng_key):
        return ("key", x.shape, np.asarray(random.key_data(x)).tobytes())
    a = np.asarray(x)
    return (a.dtype, a.shape, a.tobytes())


def _assert_same_tree(a, b):
    """Same structure, same leaf types, bit-identical leaves."""
    assert tree_util.tree_structure(a) == tree_util.tree_structure(b)
    for x, y in zip(tree_util.tree_leaves(a), tree_util.tree_leaves(b)):
        assert type(x) is type(y), (type(x), type(y))
        if type(x) is float:
            assert x.hex() == y.hex()
        elif type(x) in (int, bool, str):
            assert x == y
        else:
            assert _bits(x) == _bits(y)


def _random_bits(shape, dtype, seed=0):
    """An array of ``dtype`` with random bit patterns (NaN payloads, subnormals, ...)."""
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return np.random.default_rng(seed).integers(0, 2, shape).astype(bool)
    raw = np.random.default_rng(seed).integers(0, 256, (*shape, dt.itemsize), dtype=np.uint8)
    return raw.view(dt).reshape(shape)


def _manifest_path(path):
    return os.path.join(path, cio.MANIFEST)


def _entry(path, leaf_path):
    return next(e for e in read_manifest(path)["leaves"] if e["path"] == leaf_path)


# --- exact round trips ---

NUMPY_DTYPES = [np.float32, np.float64, np.int32, np.int64, np.int8, np.bool_, np.float16,
                np.uint32, np.uint8, np.complex64, ml_dtypes.bfloat16,
                ml_dtypes.float8_e4m3fn]


@pytest.mark.parametrize("dtype", NUMPY_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape", [(), (3,), (2, 0), (2, 3, 4)])
def test_numpy_arrays_round_trip_bitwise(tmp_path, dtype, shape):
    x = _random_bits(shape, dtype)
    path = save_checkpoint(tmp_path / "c", {"x": x, "xf": np.array(x, order="F")})
    for out in (restore_checkpoint(path), restore_checkpoint(path, target={"x": x, "xf": x})):
        assert type(out["x"]) is np.ndarray
        _assert_same_tree(out, {"x": x, "xf": x})


def test_ml_dtypes_are_stored_as_same_width_uints(tmp_path):
    x = np.array([1.5, -2.0, np.nan], ml_dtypes.bfloat16)
    path = save_checkpoint(tmp_path / "c", {"x": x})
    e = _entry(path, "['x']")
    assert (e["dtype"], e["stored_dtype"]) == ("bfloat16", "uint16")
    raw = np.load(os.path.join(path, e["file"]), allow_pickle=False)  # any numpy reads it
    assert raw.dtype == np.uint16 and raw.tobytes() == x.tobytes()


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.bool_, np.float16, np.uint32,
                                   ml_dtypes.bfloat16], ids=lambda d: np.dtype(d).name)
def test_functrax_arrays_round_trip_as_functrax_arrays(tmp_path, dtype):
    tree = {"x": fnp.asarray(_random_bits((2, 3), dtype)),
            "s": fnp.asarray(_random_bits((), dtype, seed=1))}
    path = save_checkpoint(tmp_path / "c", tree)
    target = {"x": fnp.zeros((2, 3), dtype), "s": fnp.zeros((), dtype)}
    sds = tree_util.tree_map(functrax.ShapeDtypeStruct.like, target)
    for out in (restore_checkpoint(path), restore_checkpoint(path, target),
                restore_checkpoint(path, sds)):
        assert type(out["x"]) is functrax.Array and out["x"].dtype == np.dtype(dtype)
        _assert_same_tree(out, tree)


def test_weak_type_is_kept(tmp_path):
    path = save_checkpoint(tmp_path / "c", [fnp.asarray(2.0), fnp.asarray(np.float32(2))])
    out = restore_checkpoint(path)
    assert [x.weak_type for x in out] == [True, False]


def test_python_scalars_keep_their_type(tmp_path):
    tree = {"step": 12, "big": 2 ** 80 + 1, "lr": 0.1, "nan": float("nan"), "negz": -0.0,
            "inf": float("-inf"), "flag": True, "off": False, "name": "run-1",
            "np": np.float32(0.25), "npi": np.int64(3)}
    path = save_checkpoint(tmp_path / "c", tree)
    out = restore_checkpoint(path)
    _assert_same_tree(out, tree)
    assert type(out["flag"]) is bool and type(out["step"]) is int
    assert math.copysign(1, out["negz"]) == -1 and math.isnan(out["nan"])
    assert type(out["np"]) is np.float32
    _assert_same_tree(restore_checkpoint(path, target=tree), tree)


def test_prng_keys(tmp_path):
    typed, raw = random.split(random.key(7), 3), random.PRNGKey(5)
    path = save_checkpoint(tmp_path / "c", {"k": typed, "k0": random.key(1), "raw": raw})
    e = _entry(path, "['k']")
    assert (e["kind"], e["impl"], e["key_shape"]) == ("prng_key", "threefry2x32", [3])
    assert _entry(path, "['raw']")["kind"] == "array"
    for out in (restore_checkpoint(path),
                restore_checkpoint(path, {"k": typed, "k0": random.key(0), "raw": raw})):
        assert functrax.dtypes.issubdtype(out["k"].dtype, functrax.dtypes.prng_key)
        assert out["k"].shape == (3,) and random.key_impl(out["k"]) == "threefry2x32"
        assert out["raw"].dtype == np.uint32 and out["raw"].shape == (2,)
        _assert_same_tree(out, {"k": typed, "k0": random.key(1), "raw": raw})
        np.testing.assert_array_equal(random.normal(out["k"][1], (4,)),
                                      random.normal(typed[1], (4,)))


def _train_state():
    params = {"w": fnp.asarray(np.arange(6, dtype=np.float32).reshape(2, 3)),
              "b": fnp.asarray(np.ones(3, ml_dtypes.bfloat16))}
    opt = optim.adam(1e-2)
    state = opt.init(params)
    grads = tree_util.tree_map(lambda p: fnp.ones_like(p), params)
    for _ in range(2):
        updates, state = opt.update(grads, state, params)
        params = optim.apply_updates(params, updates)
    return {"params": params, "opt_state": state, "step": 2, "key": random.key(3)}


def test_optimizer_state_round_trips_into_its_namedtuples(tmp_path):
    tree = _train_state()
    path = save_checkpoint(tmp_path / "c", tree, step=2)
    out = restore_checkpoint(path, target=_train_state())
    _assert_same_tree(out, tree)
    assert type(out["opt_state"][0]) is type(tree["opt_state"][0])
    assert out["opt_state"][0].count.dtype == np.int32


def test_without_target_namedtuples_come_back_as_lookalikes(tmp_path):
    tree = _train_state()
    out = restore_checkpoint(save_checkpoint(tmp_path / "c", tree))
    adam = out["opt_state"][0]
    assert type(adam).__name__ == "ScaleByAdamState" and adam._fields == ("count", "mu", "nu")
    assert int(adam.count) == int(tree["opt_state"][0].count)
    _assert_same_tree(tree_util.tree_leaves(out), tree_util.tree_leaves(tree))


@tree_util.register_pytree_with_keys_class
class Box:
    def __init__(self, a, b):
        self.a, self.b = a, b

    def tree_flatten_with_keys(self):
        return [(tree_util.GetAttrKey("a"), self.a), (tree_util.GetAttrKey("b"), self.b)], None

    @classmethod
    def tree_unflatten(cls, aux, kids):
        return cls(*kids)


class Pair(NamedTuple):
    x: object
    y: object


def test_nested_structures(tmp_path):
    tree = {"a": [np.zeros(2), (np.int32(1), None, {})], "b": (), "c": [],
            "d": Pair(np.ones(1), [1, 2.5]), "e": Box(np.arange(2), {"z": 3}), "f": None,
            "g": {"h": {"i": np.float64(1)}}}
    path = save_checkpoint(tmp_path / "c", tree)
    out = restore_checkpoint(path)
    assert out["b"] == () and out["c"] == [] and out["f"] is None and out["a"][1][2] == {}
    assert out["e"]["a"].tolist() == [0, 1] and out["e"]["b"] == {"z": 3}  # Box: a dict
    assert out["d"].y == [1, 2.5]
    into = restore_checkpoint(path, target=tree)
    assert type(into["e"]) is Box and type(into["d"]) is Pair
    _assert_same_tree(into, tree)


def test_root_leaf_and_empty_tree(tmp_path):
    x = np.arange(3)
    assert restore_checkpoint(save_checkpoint(tmp_path / "a", x)).tolist() == [0, 1, 2]
    assert restore_checkpoint(save_checkpoint(tmp_path / "b", {})) == {}
    assert restore_checkpoint(save_checkpoint(tmp_path / "c", None)) is None


def test_manifest_contents(tmp_path):
    path = save_checkpoint(tmp_path / "c", {"p": {"w": np.ones((2, 3), np.float32)}}, step=9,
                           metadata={"lr": np.float32(0.5), "name": "x"})
    m = json.loads(pathlib.Path(_manifest_path(path)).read_text())
    assert m["format"] == "functrax-checkpoint" and m["format_version"] == 1
    assert m["step"] == 9 and m["metadata"] == {"lr": 0.5, "name": "x"}
    (e,) = m["leaves"]
    assert e["path"] == "['p']['w']" and e["key_path"] == [["dict", "p"], ["dict", "w"]]
    assert (e["shape"], e["dtype"]) == ([2, 3], "float32")
    data = pathlib.Path(path, e["file"]).read_bytes()
    assert e["bytes"] == len(data) and e["sha256"] == hashlib.sha256(data).hexdigest()


# --- errors on save ---


def test_save_rejects_bad_leaves_naming_the_path(tmp_path):
    with pytest.raises(TypeError, match=r"leaf \['a'\]\[1\] has type builtins.object"):
        save_checkpoint(tmp_path / "c", {"a": [1, object()]})
    with pytest.raises(TypeError, match=r"leaf \['s'\] has dtype <U1"):
        save_checkpoint(tmp_path / "c", {"s": np.array(["x"])})
    with pytest.raises(TypeError, match=r"dict key \(1, 2\)"):
        save_checkpoint(tmp_path / "c", {(1, 2): np.zeros(1)})
    with pytest.raises(TypeError, match="metadata must be JSON-serializable"):
        save_checkpoint(tmp_path / "c", {}, metadata={"f": object()})
    assert not os.listdir(tmp_path)  # nothing was written


def test_save_rejects_traced_values(tmp_path):
    def f(x):
        save_checkpoint(tmp_path / "c", {"x": x})
        return x
    with pytest.raises(TypeError, match=r"leaf \['x'\] is a traced value"):
        functrax.jit(f)(fnp.ones(2))


def test_save_never_overwrites(tmp_path):
    save_checkpoint(tmp_path / "c", [1])
    with pytest.raises(FileExistsError, match="already exists"):
        save_checkpoint(tmp_path / "c", [2])
    assert restore_checkpoint(tmp_path / "c") == [1]


# --- atomicity ---


def test_save_writes_leaves_then_manifest_then_renames(tmp_path, monkeypatch):
    events = []
    for name in ("_write_leaf", "_write_manifest"):
        orig = getattr(cio, name)

        def spy(d, *a, _orig=orig, _name=name):
            events.append((_name, os.path.basename(d)))
            return _orig(d, *a)
        monkeypatch.setattr(cio, name, spy)
    orig_rename = os.rename
    monkeypatch.setattr(cio.os, "rename", lambda a, b: (events.append(("rename", b)),
                                                        orig_rename(a, b)))
    save_checkpoint(tmp_path / "c", {"a": np.zeros(1), "b": np.ones(1)})
    assert [e[0] for e in events] == ["_write_leaf", "_write_leaf", "_write_manifest", "rename"]
    assert all(d.startswith(".tmp-c-") for _, d in events[:3])


def test_failed_save_leaves_nothing(tmp_path, monkeypatch):
    def boom(*a):
        raise OSError("disk full")
    monkeypatch.setattr(cio, "_write_leaf", boom)
    with pytest.raises(OSError, match="disk full"):
        save_checkpoint(tmp_path / "c", {"a": np.zeros(1)})
    assert os.listdir(tmp_path) == []


_CRASH_SCRIPT = textwrap.dedent("""
    import os, signal, sys
    import numpy as np
    from functrax.training import CheckpointManager
    from functrax.training import checkpoints_io as cio

    directory, point = sys.argv[1], sys.argv[2]
    tree = lambda s: {"a": np.arange(4, dtype=np.float32) + s, "b": np.full(3, s), "s": s}
    mgr = CheckpointManager(directory)
    mgr.save(1, tree(1))
    mgr.wait_until_finished()
    name = "_write_leaf" if point == "leaf" else "_write_manifest"
    orig = getattr(cio, name)
    def die_after(*args):
        orig(*args)
        os.kill(os.getpid(), signal.SIGKILL)
    setattr(cio, name, die_after)
    mgr.save(2, tree(2))
    mgr.wait_until_finished()
    print("not killed")
""")


@pytest.mark.parametrize("point", ["leaf", "manifest"])
def test_killed_save_leaves_previous_checkpoint_latest(tmp_path, point):
    d = tmp_path / "ckpts"
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-c", _CRASH_SCRIPT, str(d), point], env=env,
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == -signal.SIGKILL, proc.stdout + proc.stderr
    leftovers = [n for n in os.listdir(d) if n.startswith(".tmp-step_00000002")]
    assert len(leftovers) == 1  # the kill did happen mid-save
    if point == "manifest":  # even a temporary directory with its manifest is not a step
        assert os.path.isfile(d / leftovers[0] / cio.MANIFEST)
    mgr = CheckpointManager(d)
    assert mgr.latest_step() == 1 and mgr.all_steps() == [1]
    assert not [n for n in os.listdir(d) if n.startswith(".tmp-")]  # cleaned on restart
    out = mgr.restore()
    _assert_same_tree(out, {"a": np.arange(4, dtype=np.float32) + 1, "b": np.full(3, 1),
                            "s": 1})
    mgr.save(2, {"a": np.zeros(1)})  # the interrupted step can be saved again
    mgr.close()
    assert mgr.latest_step() == 2


def test_directory_without_manifest_is_not_a_checkpoint(tmp_path):
    mgr = CheckpointManager(tmp_path, async_save=False)
    mgr.save(1, [np.zeros(1)])
    os.makedirs(mgr.step_path(5))
    np.save(os.path.join(mgr.step_path(5), "00000.npy"), np.zeros(1))
    assert mgr.all_steps() == [1] and mgr.latest_step() == 1
    with pytest.raises(CheckpointError, match="not a complete checkpoint"):
        restore_checkpoint(mgr.step_path(5))
    with pytest.raises(CheckpointError, match="not a complete checkpoint"):
        mgr.restore(5)


# --- verification on restore ---


@pytest.fixture
def saved(tmp_path):
    tree = {"w": np.arange(1000, dtype=np.float32), "n": 3}
    return save_checkpoint(tmp_path / "c", tree), tree


def test_intact_checkpoint_restores(saved):
    path, tree = saved
    _assert_same_tree(restore_checkpoint(path), tree)


def test_flipped_byte_is_detected(saved):
    path, _ = saved
    f = os.path.join(path, _entry(path, "['w']")["file"])
    data = bytearray(pathlib.Path(f).read_bytes())
    data[len(data) // 2] ^= 0x01
    pathlib.Path(f).write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match=rf"{f}.*corrupted: its sha256"):
        restore_checkpoint(path)


def test_truncated_file_is_detected(saved):
    path, _ = saved
    f = os.path.join(path, _entry(path, "['w']")["file"])
    data = pathlib.Path(f).read_bytes()
    pathlib.Path(f).write_bytes(data[:-10])
    with pytest.raises(CheckpointError, match=rf"{f}.*truncated: it has {len(data) - 10} "
                                              rf"bytes, the manifest records {len(data)}"):
        restore_checkpoint(path)


def test_missing_file_and_bad_manifest(saved):
    path, _ = saved
    f = os.path.join(path, _entry(path, "['w']")["file"])
    os.remove(f)
    with pytest.raises(CheckpointError, match=rf"file {f} of leaf \['w'\] is missing"):
        restore_checkpoint(path)
    pathlib.Path(_manifest_path(path)).write_text("{not json")
    with pytest.raises(CheckpointError, match="manifest .* is corrupted"):
        restore_checkpoint(path)
    os.remove(_manifest_path(path))
    with pytest.raises(CheckpointError, match="not a complete checkpoint"):
        restore_checkpoint(path)
    with pytest.raises(FileNotFoundError, match="no checkpoint directory"):
        restore_checkpoint(os.path.join(path, "nowhere"))


def _rewrite_entry(path, leaf_path, **fields):
    m = json.loads(pathlib.Path(_manifest_path(path)).read_text())
    for e in m["leaves"]:
        if e["path"] == leaf_path:
            e.update(fields)
    pathlib.Path(_manifest_path(path)).write_text(json.dumps(m))


def test_manifest_cannot_name_files_outside_the_checkpoint(saved, tmp_path):
    path, _ = saved
    _rewrite_entry(path, "['w']", file="../outside.npy")
    with pytest.raises(CheckpointError, match="not a file inside the checkpoint"):
        restore_checkpoint(path)


class _Evil:
    """Unpickling it creates a marker file."""

    def __init__(self, marker):
        self.marker = pathlib.Path(marker)

    def __reduce__(self):
        return (pathlib.Path.touch, (self.marker,))


def _evil_npy(path, marker):
    np.save(path, np.array([_Evil(marker), None], dtype=object), allow_pickle=True)


@pytest.mark.parametrize("claimed_dtype", ["float32", "object"])
def test_restore_never_unpickles(saved, tmp_path, claimed_dtype):
    path, _ = saved
    # the crafted file is dangerous: a pickle-enabled load would create its marker
    probe, probe_marker = tmp_path / "probe.npy", tmp_path / "probe-marker"
    _evil_npy(probe, probe_marker)
    np.load(probe, allow_pickle=True)
    assert probe_marker.exists()
    marker = tmp_path / "marker"
    f = os.path.join(path, _entry(path, "['w']")["file"])
    _evil_npy(f, marker)
    data = pathlib.Path(f).read_bytes()
    _rewrite_entry(path, "['w']", bytes=len(data), sha256=hashlib.sha256(data).hexdigest(),
                   shape=[2], dtype=claimed_dtype, stored_dtype=claimed_dtype)
    with pytest.raises(CheckpointError, match="unpickling|unsupported dtype 'object'"):
        restore_checkpoint(path)
    with pytest.raises(CheckpointError):
        restore_checkpoint(path, target={"w": np.zeros(2, np.float32), "n": 0})
    assert not marker.exists()


# --- restoring into a target ---


def test_target_mismatches_name_path_shapes_dtypes_and_file(tmp_path):
    tree = {"w": np.zeros((2, 3), np.float32), "b": np.zeros(3, np.float32), "n": 1}
    path = save_checkpoint(tmp_path / "c", tree)
    w_file = os.path.join(path, _entry(path, "['w']")["file"])
    with pytest.raises(CheckpointError) as e:
        restore_checkpoint(path, {"w": np.zeros((3, 2), np.float32), "b": np.zeros(3),
                                  "n": 1.0, "extra": fnp.zeros(1)})
    msg = str(e.value)
    assert (f"leaf ['w']: the target expects float32[3, 2] (numpy), the checkpoint holds "
            f"float32[2, 3] (numpy array) (file {w_file})") in msg
    assert "leaf ['b']: the target expects float64[3] (numpy), the checkpoint holds float32[3]" \
        in msg
    assert "leaf ['n']: the target expects Python float, the checkpoint holds Python int" in msg
    assert "leaf ['extra']: the target expects float32[1] (functrax), the checkpoint has no " \
           "such leaf" in msg
    with pytest.raises(CheckpointError, match=r"leaf \['b'\]: the checkpoint holds float32\[3\]"
                                              r" \(numpy array\) \(file .*\), the target has "
                                              r"no such leaf"):
        restore_checkpoint(path, {"w": tree["w"], "n": 0})


def test_target_key_mismatch(tmp_path):
    path = save_checkpoint(tmp_path / "c", {"k": random.split(random.key(0), 2)})
    with pytest.raises(CheckpointError, match=r"expects PRNG key array\[\] \(threefry2x32\), "
                                              r"the checkpoint holds PRNG key array\[2\] "
                                              r"\(threefry2x32\)"):
        restore_checkpoint(path, {"k": random.key(0)})
    with pytest.raises(CheckpointError, match=r"expects uint32\[2, 2\] \(numpy\), the "
                                              r"checkpoint holds PRNG key array"):
        restore_checkpoint(path, {"k": np.zeros((2, 2), np.uint32)})


def test_target_types_choose_the_output_types(tmp_path):
    x = np.arange(3, dtype=np.int32)
    path = save_checkpoint(tmp_path / "c", {"a": x, "b": fnp.asarray(x), "s": np.int32(4)})
    out = restore_checkpoint(path, {"a": fnp.asarray(x), "b": x, "s": np.int32(0)})
    assert type(out["a"]) is functrax.Array and type(out["b"]) is np.ndarray
    assert type(out["s"]) is np.int32 and out["s"] == 4


def test_float64_into_functrax_needs_x64(tmp_path):
    path = save_checkpoint(tmp_path / "c", {"a": np.ones(2)})
    with pytest.raises(CheckpointError, match="float64 data but 64-bit types are disabled"):
        restore_checkpoint(path, {"a": functrax.ShapeDtypeStruct((2,), np.float64)})


# --- the manager: retention ---


def _tree(step):
    return {"w": np.full(3, step, np.float32), "step": step}


def test_keep_last(tmp_path):
    with CheckpointManager(tmp_path, keep_last=2, async_save=False) as mgr:
        for s in range(5):
            mgr.save(s, _tree(s))
            assert mgr.all_steps() == list(range(max(0, s - 1), s + 1))
        assert mgr.latest_step() == 4 and mgr.best_step() is None
        _assert_same_tree(mgr.restore(), _tree(4))
        _assert_same_tree(mgr.restore(3), _tree(3))
        with pytest.raises(FileNotFoundError, match=r"no checkpoint for step 1 .* saved "
                                                    r"steps: \[3, 4\]"):
            mgr.restore(1)
    assert not [n for n in os.listdir(tmp_path) if n.startswith(".tmp-")]


@pytest.mark.parametrize("mode,losses,best", [("min", [3.0, 1.0, 2.0, 5.0, 4.0], 1),
                                              ("max", [3.0, 1.0, 2.0, 5.0, 4.0], 3)])
def test_keep_last_never_deletes_the_best(tmp_path, mode, losses, best):
    with CheckpointManager(tmp_path, keep_last=1, best_metric="loss", best_mode=mode,
                           async_save=False) as mgr:
        for s, loss in enumerate(losses):
            mgr.save(s, _tree(s), metrics={"loss": loss})
        assert mgr.best_step() == best
        assert mgr.all_steps() == sorted({best, len(losses) - 1})
        assert mgr.metrics(best) == {"loss": losses[best]}
        _assert_same_tree(mgr.restore(best), _tree(best))
    again = CheckpointManager(tmp_path, best_metric="loss", best_mode=mode)  # from the disk
    assert again.best_step() == best and again.latest_step() == len(losses) - 1
    again.close()


def test_keep_best_k(tmp_path):
    with CheckpointManager(tmp_path, keep_last=1, keep_best=2, best_metric="acc",
                           async_save=False) as mgr:
        for s, acc in enumerate([0.1, 0.9, 0.5, 0.8, 0.2, float("nan")]):
            mgr.save(s, _tree(s), metrics={"acc": acc})
        assert mgr.all_steps() == [1, 3, 5] and mgr.best_step() == 1


def test_without_retention_everything_is_kept(tmp_path):
    with CheckpointManager(tmp_path, async_save=False) as mgr:
        for s in range(4):
            mgr.save(s * 10, _tree(s))
        assert mgr.all_steps() == [0, 10, 20, 30]


def test_old_checkpoints_are_deleted_only_after_the_new_one_is_committed(tmp_path,
                                                                         monkeypatch):
    mgr = CheckpointManager(tmp_path, keep_last=1, async_save=False)
    mgr.save(1, _tree(1))
    seen = []
    orig = cio.write_checkpoint

    def write(*a, **k):
        seen.append(mgr.all_steps())
        out = orig(*a, **k)
        seen.append(mgr.all_steps())
        return out
    monkeypatch.setattr(cio, "write_checkpoint", write)
    mgr.save(2, _tree(2))
    assert seen == [[1], [1, 2]] and mgr.all_steps() == [2]

    def fail(*a, **k):
        raise OSError("disk full")
    monkeypatch.setattr(cio, "write_checkpoint", fail)
    with pytest.raises(OSError, match="disk full"):
        mgr.save(3, _tree(3))
    assert mgr.all_steps() == [2]


def test_manager_argument_errors(tmp_path):
    with pytest.raises(ValueError, match="keep_last must be None or an int >= 1"):
        CheckpointManager(tmp_path, keep_last=0)
    with pytest.raises(ValueError, match="best_mode must be 'max' or 'min'"):
        CheckpointManager(tmp_path, best_metric="x", best_mode="up")
    with pytest.raises(ValueError, match="keep_best=2 needs best_metric"):
        CheckpointManager(tmp_path, keep_best=2)
    with CheckpointManager(tmp_path, best_metric="loss", async_save=False) as mgr:
        with pytest.raises(ValueError, match=r"metrics has no 'loss'.*got \['acc'\]"):
            mgr.save(1, _tree(1), metrics={"acc": 1.0})
        mgr.save(1, _tree(1), metrics={"loss": np.float32(0.5)}, metadata={"epoch": 1})
        assert mgr.metrics(1) == {"loss": 0.5} and mgr.metadata(1) == {"epoch": 1}
        mgr.save(2, _tree(2))  # no metrics (a mid-epoch save): saved, never ranked best
        assert mgr.metrics(2) == {} and mgr.latest_step() == 2 and mgr.best_step() == 1
        with pytest.raises(FileExistsError, match="step 1 is already saved"):
            mgr.save(1, _tree(1), metrics={"loss": 0.1})
        with pytest.raises(TypeError, match="step must be a non-negative int"):
            mgr.save(-1, _tree(1), metrics={"loss": 0.1})
        with pytest.raises(FileNotFoundError, match="no checkpoint for step 7"):
            mgr.metrics(7)
    with pytest.raises(FileNotFoundError, match="no checkpoints in"):
        CheckpointManager(tmp_path / "empty").restore()


# --- the manager: asynchronous saves ---


class _BlockedWriter:
    """Replaces ``cio.write_checkpoint``: each write waits for ``release`` and is recorded;
    the steps in ``fail`` raise."""

    def __init__(self, monkeypatch, fail=()):
        self.release, self.steps, self.fail = threading.Event(), [], set(fail)
        self.orig = cio.write_checkpoint
        monkeypatch.setattr(cio, "write_checkpoint", self)

    def __call__(self, directory, snap, *, step, **kw):
        assert self.release.wait(30)
        self.steps.append(step)
        if step in self.fail:
            raise OSError(f"cannot write step {step}")
        return self.orig(directory, snap, step=step, **kw)


def test_async_save_snapshots_the_leaves(tmp_path, monkeypatch):
    writer = _BlockedWriter(monkeypatch)
    w = np.arange(5, dtype=np.float32)
    state = {"w": w, "pos": 3, "inner": [w[1:3]]}
    mgr = CheckpointManager(tmp_path)
    mgr.save(1, state)  # returns while the writer is blocked
    assert mgr.latest_step() is None
    w += 100  # training goes on, in place
    state["pos"] = 4
    writer.release.set()
    mgr.wait_until_finished()
    assert mgr.latest_step() == 1
    out = mgr.restore()
    np.testing.assert_array_equal(out["w"], np.arange(5, dtype=np.float32))
    np.testing.assert_array_equal(out["inner"][0], [1, 2])
    assert out["pos"] == 3
    mgr.close()


def test_async_saves_are_written_in_order(tmp_path, monkeypatch):
    writer = _BlockedWriter(monkeypatch)
    with CheckpointManager(tmp_path, keep_last=2) as mgr:
        for s in [3, 1, 7, 5, 9]:
            mgr.save(s, _tree(s))
        writer.release.set()
    assert writer.steps == [3, 1, 7, 5, 9]
    assert mgr.all_steps() == [7, 9]


def test_restore_waits_for_pending_saves(tmp_path, monkeypatch):
    writer = _BlockedWriter(monkeypatch)
    with CheckpointManager(tmp_path) as mgr:
        mgr.save(4, _tree(4))
        threading.Timer(0.2, writer.release.set).start()
        _assert_same_tree(mgr.restore(), _tree(4))


@pytest.mark.parametrize("reraised_by", ["save", "wait_until_finished", "close"])
def test_async_writer_errors_are_reraised(tmp_path, monkeypatch, reraised_by):
    writer = _BlockedWriter(monkeypatch, fail={2})
    mgr = CheckpointManager(tmp_path)
    mgr.save(1, _tree(1))
    mgr.save(2, _tree(2))
    writer.release.set()
    if reraised_by == "save":
        while not all(f.done() for _, f in mgr._pending):
            threading.Event().wait(0.01)
        call = lambda: mgr.save(3, _tree(3))
    else:
        call = getattr(mgr, reraised_by)
    with pytest.raises(OSError, match="cannot write step 2") as e:
        call()
    if sys.version_info >= (3, 11):
        assert "while saving step 2" in "".join(e.value.__notes__)
    mgr.close()  # the error was reported once
    assert mgr.all_steps() == [1]


def test_context_manager_finishes_saves(tmp_path):
    with CheckpointManager(tmp_path) as mgr:
        mgr.save(1, _train_state(), metrics={"loss": 1.0})
    assert mgr.all_steps() == [1]
    with pytest.raises(RuntimeError, match="the manager is closed"):
        mgr.save(2, _tree(2))
    _assert_same_tree(mgr.restore(target=_train_state()), _train_state())


# --- docs ---


@pytest.mark.parametrize("module", [ckpt, cio, cfmt, cmgr])
def test_doctests(module):
    result = doctest.testmod(module)
    assert result.failed == 0 and (module is cio or result.attempted > 0)
