"""functrax.training.metrics: the run directory and config.json, JSON-lines and TensorBoard
logs, PNG curves, throughput arithmetic (injected clocks) and NaN/Inf checks."""
import collections
import datetime
import json
import os
import struct
import subprocess
import sys
import warnings

import numpy as np
import pytest

import functrax
import functrax.numpy as fnp
from functrax.training import metrics
from functrax.training.metrics import (
    MetricsLogger, NonFiniteError, RunDirectory, Throughput, check_finite, plot_metrics,
    read_metrics,
)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _clock(*times):
    it = iter(times)
    return lambda: next(it)


# --- the run directory ---


def test_run_directory_layout_and_config(tmp_path):
    run = RunDirectory(tmp_path / "run", config={"lr": 0.1, "scale": np.float32(2.0),
                                                 "shape": (2, 3)}, git_cwd=ROOT)
    assert run.path == str(tmp_path / "run") and os.fspath(run) == run.path
    for d in (run.checkpoints, run.events, run.plots):
        assert os.path.isdir(d) and os.path.dirname(d) == run.path
    assert run.metrics_file == os.path.join(run.path, "metrics.jsonl")
    with open(run.config_file) as f:
        info = json.load(f)
    assert info["config"] == {"lr": 0.1, "scale": 2.0, "shape": [2, 3]}
    assert info["argv"] == sys.argv
    assert datetime.datetime.fromisoformat(info["start_time"]).tzinfo is not None
    assert info["versions"] == {"functrax": functrax.__version__,
                                "python": ".".join(map(str, sys.version_info[:3])),
                                "numpy": np.__version__}
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True,
                          text=True)
    if head.returncode != 0:
        pytest.skip("the tests do not run inside a git checkout")
    assert info["git"]["commit"] == head.stdout.strip()
    assert isinstance(info["git"]["dirty"], bool)
    assert run.contents() == ["config.json"]


def test_run_directory_outside_git(tmp_path):
    run = RunDirectory(tmp_path / "run", git_cwd=str(tmp_path))
    assert run.info["git"] == {"commit": None, "dirty": None}
    assert run.info["config"] == {}


def test_run_directory_contents_lists_files(tmp_path):
    run = RunDirectory(tmp_path / "r")
    with MetricsLogger(run, tensorboard=False) as log:
        log.log(0, loss=1.0)
    with open(os.path.join(run.checkpoints, "step_0.npz"), "wb") as f:
        f.write(b"x")
    assert run.contents() == ["checkpoints/step_0.npz", "config.json", "metrics.jsonl"]
    assert "checkpoints/step_0.npz" in run.summary()
    with pytest.raises(TypeError, match="config must be a dict"):
        RunDirectory(tmp_path / "s", config=[1, 2])


# --- JSON lines ---


def test_json_lines_are_written_and_flushed_at_once(tmp_path):
    log = MetricsLogger(tmp_path, tensorboard=False, clock=_clock(100.0, 101.5, 103.0))
    log.log(0, loss=np.float32(2.5), acc=1)
    log.log(np.int64(10), loss=fnp.asarray(1.25), lr=np.array([0.1]))
    # not closed: what was logged is already in the file
    with open(tmp_path / "metrics.jsonl") as f:
        lines = f.read().splitlines()
    assert [json.loads(line) for line in lines] == [
        {"step": 0, "time": 100.0, "loss": 2.5, "acc": 1.0},
        {"step": 10, "time": 101.5, "loss": 1.25, "lr": 0.1}]
    assert all(type(v) is float for v in json.loads(lines[1]).values() if v != 10)
    log.close()
    log.close()  # twice is harmless
    with pytest.raises(ValueError, match="closed"):
        log.log(1, loss=1.0)
    # a new logger appends (a resumed run)
    with MetricsLogger(tmp_path, tensorboard=False, clock=_clock(200.0)) as log:
        log.log(11, loss=float("nan"))
    records = read_metrics(tmp_path)
    assert [r["step"] for r in records] == [0, 10, 11]
    assert np.isnan(records[-1]["loss"])
    assert read_metrics(tmp_path / "metrics.jsonl") == records == log.read()


def test_log_errors(tmp_path):
    with MetricsLogger(tmp_path, tensorboard=False) as log:
        with pytest.raises(ValueError, match=r"metric 'loss' must be a scalar, got shape \(3,\)"):
            log.log(0, loss=np.ones(3))
        with pytest.raises(TypeError, match="step must be an integer"):
            log.log(1.5, loss=1.0)
        with pytest.raises(ValueError, match="'time' is the record's"):
            log.log(0, time=1.0)
        with pytest.raises(TypeError, match="metric 'name' must be a real number"):
            log.log(0, name="abc")
    assert read_metrics(tmp_path) == []


def test_read_metrics_skips_a_cut_last_line_and_rejects_others(tmp_path):
    path = tmp_path / "metrics.jsonl"
    path.write_text('{"step": 0, "time": 1.0, "loss": 1.0}\n{"step": 1, "ti')
    assert read_metrics(path) == [{"step": 0, "time": 1.0, "loss": 1.0}]
    path.write_text('{"step": 0, "ti\n{"step": 1, "time": 1.0}\n')
    with pytest.raises(ValueError, match="line 1 is not a JSON record"):
        read_metrics(path)


# --- TensorBoard ---


def _tfrecords(path):
    """The records of a TFRecord file (length, masked CRC, data, masked CRC)."""
    with open(path, "rb") as f:
        buf = f.read()
    out, i = [], 0
    while i < len(buf):
        (n,) = struct.unpack("<Q", buf[i:i + 8])
        out.append(buf[i + 12:i + 12 + n])
        i += 12 + n + 4
    assert i == len(buf)
    return out


def _event_file(events_dir):
    files = [f for f in os.listdir(events_dir) if f.startswith("events.out.tfevents")]
    assert len(files) == 1, files
    path = os.path.join(events_dir, files[0])
    assert os.path.getsize(path) > 0
    return path


def test_tensorboard_event_file_written_and_readable(tmp_path):
    pytest.importorskip("tensorboardX")
    from tensorboardX.proto import event_pb2
    run = RunDirectory(tmp_path / "run")
    with MetricsLogger(run) as log:
        assert log.writer is not None
        for step in range(3):
            log.log(step, loss=1.0 / (step + 1), acc=0.5 * step)
    scalars = collections.defaultdict(list)
    for rec in _tfrecords(_event_file(run.events)):
        ev = event_pb2.Event.FromString(rec)
        for v in ev.summary.value:
            scalars[v.tag].append((ev.step, v.simple_value))
    assert scalars["loss"] == [(0, 1.0), (1, 0.5), (2, pytest.approx(1 / 3))]
    assert scalars["acc"] == [(0, 0.0), (1, 0.5), (2, 1.0)]
    assert len(read_metrics(run)) == 3  # and the JSON lines too


def test_tensorboard_event_accumulator_reads_it(tmp_path):
    pytest.importorskip("tensorboardX")
    ea = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator")
    with MetricsLogger(tmp_path) as log:
        log.log(5, loss=0.25)
    acc = ea.EventAccumulator(os.path.join(tmp_path, "events"))
    acc.Reload()
    assert [(e.step, e.value) for e in acc.Scalars("loss")] == [(5, 0.25)]


def test_without_tensorboardx_a_note_once_and_json_lines(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "tensorboardX", None)  # import fails
    monkeypatch.setattr(metrics, "_tensorboard_warned", False)
    with pytest.warns(UserWarning, match="tensorboardX is not installed"):
        first = MetricsLogger(tmp_path / "a")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        second = MetricsLogger(tmp_path / "b")  # said once per process
        MetricsLogger(tmp_path / "c", tensorboard=False).close()
    for log in (first, second):
        assert log.writer is None
        log.log(1, loss=0.5)
        log.close()
        assert read_metrics(log.path)[0]["loss"] == 0.5
        assert not os.path.exists(log.events) or os.listdir(log.events) == []


# --- plots ---


def _logged(tmp_path):
    log = MetricsLogger(tmp_path, tensorboard=False)
    for step in range(20):
        log.log(step, loss=1.0 / (step + 1), acc=step / 20)
    log.log(20, val_loss=0.3)
    return log


def test_plot_writes_a_matplotlib_png(tmp_path):
    pytest.importorskip("matplotlib")
    log = _logged(tmp_path)
    path = log.plot()
    assert path == os.path.join(tmp_path, "plots", "metrics.png")
    with open(path, "rb") as f:
        png = f.read()
    assert png.startswith(PNG_SIGNATURE)
    assert b"Matplotlib" in png  # matplotlib's Software text chunk
    only = plot_metrics(tmp_path, str(tmp_path / "loss.png"), metrics=["loss"])
    with open(only, "rb") as f:
        assert f.read(8) == PNG_SIGNATURE
    # three subplots are taller than one
    w3, h3 = struct.unpack(">II", png[16:24])
    with open(only, "rb") as f:
        w1, h1 = struct.unpack(">II", f.read(24)[16:24])
    assert w1 == w3 and h3 > 2 * h1
    with pytest.raises(ValueError, match=r"no metric \['lost'\].*logged metrics: "
                                         r"\['loss', 'acc', 'val_loss'\]"):
        log.plot(metrics=["lost"])
    log.close()


def test_plot_without_matplotlib_says_so(tmp_path, monkeypatch):
    log = _logged(tmp_path)
    for name in ("matplotlib", "matplotlib.figure", "matplotlib.backends.backend_agg"):
        monkeypatch.setitem(sys.modules, name, None)
    with pytest.warns(UserWarning, match="matplotlib is not installed"):
        assert log.plot() is None
    assert not os.path.exists(os.path.join(tmp_path, "plots", "metrics.png"))
    log.close()


def test_plot_of_nothing_raises(tmp_path):
    MetricsLogger(tmp_path, tensorboard=False).close()
    with pytest.raises(ValueError, match="nothing to plot"):
        plot_metrics(tmp_path)


# --- throughput ---


def test_throughput_since_start():
    tp = Throughput(window=None, clock=_clock(10.0, 11.0, 12.0, 14.0, 20.0))
    assert tp.rate() == 0.0
    tp.update(100)   # t=11
    tp.update(100)   # t=12
    tp.update(200)   # t=14
    assert tp.total == 400 and tp.rate() == 400 / 4.0
    tp.reset()       # t=20
    assert tp.total == 0 and tp.rate() == 0.0


def test_throughput_sliding_window():
    # start at 0; updates at 10 (slow first step), 11, 12, 13
    tp = Throughput(window=2, clock=_clock(0.0, 10.0, 11.0, 12.0, 13.0))
    tp.update(32)
    assert tp.rate() == 32 / 10.0
    tp.update(32)
    assert tp.rate() == 64 / 11.0          # both updates since the start
    tp.update(32)
    assert tp.rate() == 64 / 2.0           # the last two: from t=10 to t=12
    tp.update(64)
    assert tp.rate() == 96 / 2.0           # from t=11 to t=13
    assert tp.total == 160


def test_throughput_errors():
    with pytest.raises(ValueError, match="window must be a positive int"):
        Throughput(window=0)
    with pytest.raises(ValueError, match="num_examples must be >= 0"):
        Throughput(clock=_clock(0.0)).update(-1)


# --- NaN/Inf checks ---

Dense = collections.namedtuple("Dense", "weight bias")


def _grads(weight, bias):
    return {"params": {"dense": Dense(weight=weight, bias=bias)},
            "step": np.int32(3)}


def test_check_finite_passes_finite_losses():
    assert check_finite(0, 1.5) is None
    assert check_finite(1, np.float32(0.0), _grads(np.full(3, np.nan), np.ones(2))) is None


def test_check_finite_names_the_first_nonfinite_gradient():
    grads = _grads(np.array([[1.0, np.nan], [np.inf, 2.0]], np.float32),
                   np.array([np.nan]))
    with pytest.raises(NonFiniteError) as info:
        check_finite(7, float("nan"), grads)
    msg = str(info.value)
    assert msg.startswith("step 7: the loss is nan; first non-finite gradient: "
                          "['params']['dense'].weight (float32[2, 2]: 2 of 4 values NaN/Inf)")
    assert "bias" not in msg and "jax_debug_nans" in msg
    assert isinstance(info.value, FloatingPointError)
    assert (info.value.step, info.value.path) == (7, "['params']['dense'].weight")
    assert np.isnan(info.value.loss)


def test_check_finite_only_the_loss_is_bad():
    with pytest.raises(NonFiniteError, match=r"step 3: the loss is inf; all gradients finite"):
        check_finite(3, fnp.asarray(np.inf), _grads(np.ones(2), np.zeros(1)))
    with pytest.raises(NonFiniteError, match=r"the loss is -inf; no gradients given"):
        check_finite(3, -np.inf)
    with pytest.raises(NonFiniteError, match=r"an array of shape \(2,\) with 1 NaN/Inf"):
        check_finite(4, np.array([1.0, np.nan]))
