"""functrax.ad_checkpoint: checkpoint_name (the ``name`` primitive), every policy of
checkpoint_policies, Saveable / Recompute / Offloadable answers, print_saved_residuals."""
import numpy as np
import pytest

import functrax
import functrax.numpy as fnp
from functrax import ad_checkpoint as ac
from functrax.ad_checkpoint import checkpoint_name, checkpoint_policies as cp


def _f(x):
    h = checkpoint_name(fnp.sin(x), "h")
    a = checkpoint_name(fnp.cos(h), "a")
    return fnp.sin(a) * h


def _residual_lines(f, *args, capsys):
    ac.print_saved_residuals(f, *args)
    return capsys.readouterr().out.strip().splitlines()


def test_checkpoint_name_prints_as_jax():
    text = str(functrax.make_jaxpr(lambda x: checkpoint_name(x, "h"))(1.0))
    assert text == "{ lambda ; a:f32[]. let b:f32[] = name[name=h] a in (b,) }"
    tree = checkpoint_name({"a": fnp.ones(2), "b": 1.0}, "t")
    assert set(tree) == {"a", "b"}
    with pytest.raises(TypeError, match="name must be a str"):
        checkpoint_name(1.0, 3)


def test_checkpoint_name_transforms():
    np.testing.assert_allclose(functrax.grad(lambda x: checkpoint_name(x, "h") ** 2)(3.0), 6.0)
    np.testing.assert_allclose(functrax.vmap(lambda x: checkpoint_name(x, "z"))(fnp.ones(3)),
                               np.ones(3))
    np.testing.assert_allclose(functrax.jit(lambda x: checkpoint_name(x, "z"))(fnp.ones(3)),
                               np.ones(3))


POLICIES = [
    None, cp.everything_saveable, cp.nothing_saveable, cp.dots_saveable, cp.checkpoint_dots,
    cp.dots_with_no_batch_dims_saveable, cp.checkpoint_dots_with_no_batch_dims,
    cp.offload_dot_with_no_batch_dims("device", "pinned_host"),
    cp.save_anything_except_these_names("h"), cp.save_any_names_but_these("h"),
    cp.save_only_these_names("h", "a"),
    cp.save_from_both_policies(cp.save_only_these_names("h"), cp.dots_saveable),
    cp.save_and_offload_only_these_names(names_which_can_be_saved=["h"],
                                         names_which_can_be_offloaded=["a"],
                                         offload_src="device", offload_dst="pinned_host"),
]


@pytest.mark.parametrize("policy", POLICIES)
def test_every_policy_gives_the_same_gradient(policy):
    w = fnp.array([[0.5, -0.2], [0.3, 0.8]])

    def g(x):
        return fnp.sum(_f(w @ x))
    x = fnp.array([0.3, -0.7])
    want = functrax.grad(g)(x)
    got = functrax.grad(functrax.checkpoint(g, policy=policy))(x)
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_saved_residuals_follow_the_policy(capsys):
    f = functrax.checkpoint(_f, policy=cp.save_only_these_names("h"))
    assert _residual_lines(f, 1.0, capsys=capsys) == [
        "f32[] from the argument x", "f32[] named 'h' from _f"]
    f = functrax.checkpoint(_f, policy=cp.save_and_offload_only_these_names(
        names_which_can_be_saved=["h"], names_which_can_be_offloaded=["a"],
        offload_src="device", offload_dst="pinned_host"))
    assert _residual_lines(f, 1.0, capsys=capsys) == [
        "f32[] from the argument x", "f32[] named 'h' from _f", "f32[] named 'a' from _f"]
    assert _residual_lines(functrax.checkpoint(_f), 1.0, capsys=capsys) == [
        "f32[] from the argument x"]


def test_print_saved_residuals_without_checkpoint(capsys):
    lines = _residual_lines(lambda x: fnp.sin(fnp.sin(x)), 1.0, capsys=capsys)
    assert lines == ["f32[] output of cos from <lambda>"] * 2

    def g(W, x):
        return fnp.sum(W @ fnp.tanh(W @ x))
    lines = _residual_lines(functrax.checkpoint(g, policy=cp.dots_saveable), fnp.ones((3, 3)),
                            fnp.ones(3), capsys=capsys)
    assert lines == ["f32[3,3] from the argument W", "f32[3] from the argument x",
                     "f32[3] output of dot_general from g"]


def test_policy_answers():
    assert ac.Offloadable("device", "pinned_host").dst == "pinned_host"
    assert repr(ac.Saveable) == "Saveable" and repr(ac.Recompute) == "Recompute"
    with pytest.raises(ValueError, match="should not intersect"):
        cp.save_and_offload_only_these_names(names_which_can_be_saved=["a"],
                                             names_which_can_be_offloaded=["a"],
                                             offload_src="device", offload_dst="pinned_host")
    bad = cp.save_from_both_policies(lambda *_, **__: ac.Saveable, cp.nothing_saveable)
    with pytest.raises(ValueError, match="should be a boolean"):
        functrax.grad(functrax.checkpoint(fnp.sin, policy=bad))(1.0)


def test_saved_residuals_pairs():
    pairs = ac.saved_residuals(functrax.checkpoint(_f, policy=cp.everything_saveable), 1.0)
    assert all(hasattr(a, "shape") and isinstance(s, str) for a, s in pairs)
