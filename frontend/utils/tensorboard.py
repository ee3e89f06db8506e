"""``ember.utils.tensorboard``: ``SummaryWriter`` logging scalars, histograms, images,
text, precision-recall curves, hyperparameters, embeddings (the projector) and model graphs
(traced with ``ember.fx``) for TensorBoard, over the ``tensorboard`` package (its protocol
buffers and event-file writer), as ``torch.utils.tensorboard``. Install it with
``pip install tensorboard`` (``ember-tensor[tensorboard]``); without it, importing this
module raises ImportError, as PyTorch's does.

>>> from ember.utils.tensorboard import SummaryWriter
>>> with SummaryWriter("runs/exp1") as w:
...     for step in range(3):
...         w.add_scalar("loss", 1.0 / (step + 1), step)
"""
from __future__ import annotations

import io
import math
import os
import socket
import time
from datetime import datetime

import numpy as np

import ember
from ember.dispatcher import dtypes as D
from ember.dispatcher.core import TensorBase
from ember.fx import symbolic_trace
from ember.fx.passes.shape_prop import ShapeProp

try:
    import tensorboard  # noqa: F401  (the optional dependency this module writes through)
    from google.protobuf import struct_pb2, text_format
    from tensorboard.compat.proto import (attr_value_pb2, config_pb2, graph_pb2, node_def_pb2,
                                          step_stats_pb2, tensor_pb2, tensor_shape_pb2,
                                          versions_pb2)
    from tensorboard.compat.proto.event_pb2 import Event, TaggedRunMetadata
    from tensorboard.compat.proto.summary_pb2 import HistogramProto, Summary, SummaryMetadata
    from tensorboard.plugins.hparams import api_pb2 as _hp, plugin_data_pb2 as _hp_data
    from tensorboard.plugins.pr_curve.plugin_data_pb2 import PrCurvePluginData
    from tensorboard.plugins.projector.projector_config_pb2 import (EmbeddingInfo,
                                                                    ProjectorConfig)
    from tensorboard.plugins.text.plugin_data_pb2 import TextPluginData
    from tensorboard.summary.writer.event_file_writer import EventFileWriter
except ImportError as e:  # (as PyTorch: the module is unusable without tensorboard)
    raise ImportError("ember.utils.tensorboard needs the `tensorboard` package (version 1.15 "
                      "or above): pip install tensorboard") from e

try:
    from PIL import Image as _PILImage
except ImportError:  # images need Pillow (a dependency of tensorboard's own installs)
    _PILImage = None

__all__ = ["SummaryWriter", "FileWriter"]


def _numpy(x) -> np.ndarray:
    """``x`` (an ember tensor, a NumPy array, a number or a list) as a NumPy array."""
    if isinstance(x, TensorBase):
        t = x.detach()
        if t.device.type != "cpu":
            t = t.cpu()
        if t.dtype is D.bfloat16:
            t = t.float()
        return t.numpy()
    return np.asarray(x)


def _scalar(x) -> float:
    a = _numpy(x)
    if a.size != 1:
        raise ValueError(f"add_scalar(): the value must have one element, got shape "
                         f"{a.shape}")
    return float(a.reshape(()))


class FileWriter:
    """One event file in ``log_dir`` (``SummaryWriter`` keeps one, plus one per
    ``add_scalars`` series)."""

    def __init__(self, log_dir: str, max_queue: int = 10, flush_secs: int = 120,
                 filename_suffix: str = ""):
        self.event_writer = EventFileWriter(str(log_dir), max_queue, flush_secs,
                                            filename_suffix)

    def get_logdir(self) -> str:
        return self.event_writer.get_logdir()

    def add_event(self, event, step=None, walltime=None):
        event.wall_time = time.time() if walltime is None else walltime
        if step is not None:
            event.step = int(step)
        self.event_writer.add_event(event)

    def add_summary(self, summary, global_step=None, walltime=None):
        self.add_event(Event(summary=summary), global_step, walltime)

    def flush(self):
        self.event_writer.flush()

    def close(self):
        self.event_writer.close()

    def reopen(self):
        self.event_writer.reopen()


# the bucket edges TensorFlow's histograms use: ±1e-12 · 1.1^k up to 1e20, and 0
def _tensorflow_bins() -> np.ndarray:
    pos = []
    v = 1e-12
    while v < 1e20:
        pos.append(v)
        v *= 1.1
    pos = np.array(pos)
    return np.concatenate([-pos[::-1], [0.0], pos])


_TF_BINS = _tensorflow_bins()


def _histogram(values: np.ndarray, bins, max_bins=None) -> HistogramProto:
    values = values.reshape(-1).astype(np.float64)
    if values.size == 0:
        raise ValueError("The input has no element.")
    if isinstance(bins, str) and bins == "tensorflow":
        bins = _TF_BINS
    counts, limits = np.histogram(values, bins=bins)
    if max_bins is not None and len(counts) > max_bins:
        group = -(-len(counts) // max_bins)
        pad = (-len(counts)) % group
        counts = np.pad(counts, (0, pad)).reshape(-1, group).sum(axis=-1)
        limits = np.concatenate([limits[:-1:group], limits[-1:]])
    # drop the empty buckets on both sides, keeping one empty bucket on the left
    nz = np.nonzero(counts)[0]
    if nz.size == 0:
        raise ValueError("The histogram is empty (no value falls in the bins).")
    first, last = int(nz[0]), int(nz[-1])
    if first > 0:
        kept_counts = counts[first - 1:last + 1]
    else:
        kept_counts = np.concatenate([[0], counts[:last + 1]])
    kept_limits = limits[first:last + 2]
    return HistogramProto(min=float(values.min()), max=float(values.max()),
                          num=int(values.size), sum=float(values.sum()),
                          sum_squares=float(values.dot(values)),
                          bucket_limit=kept_limits.tolist(), bucket=kept_counts.tolist())


def _to_hwc(img: np.ndarray, dataformats: str) -> np.ndarray:
    """An image in any of PyTorch's layouts (CHW, HWC, HW, NCHW, ...) as HWC with 1, 3
    or 4 channels; a batch (N...) becomes a grid."""
    fmt = dataformats.upper()
    if len(set(fmt)) != len(fmt) or set(fmt) - set("NCHW"):
        raise ValueError(f"dataformats must be letters from NCHW without repeats, got "
                         f"{dataformats!r}")
    if img.ndim != len(fmt):
        raise ValueError(f"size of input tensor and input format are different. tensor shape: "
                         f"{img.shape}, input_format: {dataformats}")
    if "N" in fmt:
        img = img.transpose([fmt.index(c) for c in "NCHW" if c in fmt])
        if "C" not in fmt:
            img = img[:, None]
        return _to_hwc(_grid(img), "CHW")
    order = [fmt.index(c) for c in "HWC" if c in fmt]
    img = img.transpose(order)
    if "C" not in fmt:
        img = img[:, :, None]
    if img.shape[2] == 1:
        img = np.repeat(img, 3, axis=2)
    return img


def _grid(batch: np.ndarray, ncols: int = 8) -> np.ndarray:
    """(N, C, H, W) images laid out in a grid (CHW)."""
    n, c, h, w = batch.shape
    if c == 1:
        batch = np.repeat(batch, 3, axis=1)
        c = 3
    cols = min(n, ncols)
    rows = -(-n // cols)
    out = np.zeros((c, rows * h, cols * w), dtype=batch.dtype)
    for i in range(n):
        r, k = divmod(i, cols)
        out[:, r * h:(r + 1) * h, k * w:(k + 1) * w] = batch[i]
    return out


def _image_summary(tag, img: np.ndarray) -> Summary:
    if _PILImage is None:
        raise ImportError("add_image() needs Pillow to encode PNG images: pip install pillow")
    scale = 1 if img.dtype == np.uint8 else 255
    arr = np.clip(img.astype(np.float64) * scale, 0, 255).round().astype(np.uint8) \
        if img.dtype != np.uint8 else img
    h, w, c = arr.shape
    buf = io.BytesIO()
    _PILImage.fromarray(arr).save(buf, format="PNG")
    image = Summary.Image(height=h, width=w, colorspace=c,
                          encoded_image_string=buf.getvalue())
    return Summary(value=[Summary.Value(tag=tag, image=image)])


def _text_summary(tag, text: str) -> Summary:
    meta = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(
        plugin_name="text", content=TextPluginData(version=0).SerializeToString()))
    tensor = tensor_pb2.TensorProto(
        dtype="DT_STRING", string_val=[text.encode("utf8")],
        tensor_shape=tensor_shape_pb2.TensorShapeProto(
            dim=[tensor_shape_pb2.TensorShapeProto.Dim(size=1)]))
    return Summary(value=[Summary.Value(tag=tag + "/text_summary", metadata=meta,
                                        tensor=tensor)])


# ---- precision-recall curves (TensorBoard's pr_curves plugin) -------------------------------
_PR_MIN_COUNT = 1e-7    # (the denominators' floor: no 0 / 0 where nothing is predicted)


def _pr_data(labels: np.ndarray, predictions: np.ndarray, num_thresholds: int,
             weights) -> np.ndarray:
    """(6, num_thresholds): the true and false positives, true and false negatives,
    precision and recall when predictions at or above each of ``num_thresholds`` evenly
    spaced thresholds in [0, 1] count as positive."""
    bucket = np.floor(predictions.reshape(-1) * (num_thresholds - 1)).astype(np.int32)
    positive = labels.reshape(-1).astype(np.float64)
    w = 1.0 if weights is None else np.asarray(weights, dtype=np.float64).reshape(-1)
    span = (0, num_thresholds - 1)
    tp_at = np.histogram(bucket, bins=num_thresholds, range=span, weights=positive * w)[0]
    fp_at = np.histogram(bucket, bins=num_thresholds, range=span,
                         weights=(1.0 - positive) * w)[0]
    # a threshold's counts are those of its bucket and every bucket above it
    tp, fp = np.cumsum(tp_at[::-1])[::-1], np.cumsum(fp_at[::-1])[::-1]
    tn, fn = fp[0] - fp, tp[0] - tp
    precision = tp / np.maximum(_PR_MIN_COUNT, tp + fp)
    recall = tp / np.maximum(_PR_MIN_COUNT, tp + fn)
    return np.stack((tp, fp, tn, fn, precision, recall))


def _pr_summary(tag: str, data: np.ndarray, num_thresholds: int) -> Summary:
    meta = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(
        plugin_name="pr_curves",
        content=PrCurvePluginData(version=0, num_thresholds=num_thresholds)
        .SerializeToString()))
    tensor = tensor_pb2.TensorProto(
        dtype="DT_FLOAT", float_val=data.astype(np.float32).reshape(-1).tolist(),
        tensor_shape=tensor_shape_pb2.TensorShapeProto(
            dim=[tensor_shape_pb2.TensorShapeProto.Dim(size=n) for n in data.shape]))
    return Summary(value=[Summary.Value(tag=tag, metadata=meta, tensor=tensor)])


# ---- hyperparameters (TensorBoard's hparams plugin) -----------------------------------------
def _hparams_summary(tag: str, **content) -> Summary:
    data = _hp_data.HParamsPluginData(version=0, **content)
    meta = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(
        plugin_name="hparams", content=data.SerializeToString()))
    return Summary(value=[Summary.Value(tag=tag, metadata=meta)])


def _hparams_summaries(hparam_dict: dict, metric_dict: dict, domains) -> tuple:
    """The experiment, session-start and session-end summaries of one hparams run."""
    domains = {} if domains is None else domains
    if not isinstance(domains, dict):
        raise TypeError("parameter: hparam_domain_discrete should be a dictionary, nothing "
                        "else")
    for k, v in domains.items():
        if (k not in hparam_dict or not isinstance(v, list)
                or not all(isinstance(d, type(hparam_dict[k])) for d in v)):
            raise TypeError(f"parameter: hparam_domain_discrete[{k}] should be a list of same "
                            f"type as hparam_dict[{k}].")
    infos = []
    start = _hp_data.SessionStartInfo()
    for k, v in hparam_dict.items():
        if v is None:
            continue
        if isinstance(v, TensorBase):
            v = float(_numpy(v).reshape(-1)[0])
        # (bool is an int: a number, as in PyTorch's writer)
        if isinstance(v, (int, float)):
            start.hparams[k].number_value = v
            kind, field = "DATA_TYPE_FLOAT64", "number_value"
        elif isinstance(v, str):
            start.hparams[k].string_value = v
            kind, field = "DATA_TYPE_STRING", "string_value"
        else:
            raise ValueError("value should be one of int, float, str, bool, or torch.Tensor")
        discrete = None
        if k in domains:
            discrete = struct_pb2.ListValue(values=[struct_pb2.Value(**{field: d})
                                                    for d in domains[k]])
        infos.append(_hp.HParamInfo(name=k, type=_hp.DataType.Value(kind),
                                    domain_discrete=discrete))
    experiment = _hp.Experiment(hparam_infos=infos, metric_infos=[
        _hp.MetricInfo(name=_hp.MetricName(tag=k)) for k in metric_dict])
    end = _hp_data.SessionEndInfo(status=_hp.Status.Value("STATUS_SUCCESS"))
    return (_hparams_summary("_hparams_/experiment", experiment=experiment),
            _hparams_summary("_hparams_/session_start_info", session_start_info=start),
            _hparams_summary("_hparams_/session_end_info", session_end_info=end))


# ---- embeddings (TensorBoard's projector) ---------------------------------------------------
def _projector_dir_name(tag: str) -> str:
    """``tag`` as one directory name (``%``, ``/`` and ``\\`` escaped)."""
    return tag.replace("%", "%25").replace("/", "%2f").replace("\\", "%5c")


def _write_text(path: str, lines) -> None:
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")


def _write_sprite(imgs: np.ndarray, path: str) -> None:
    """The label images in one square PNG, ceil(sqrt(n)) to a row (the projector's
    sprite; values scaled by 255 as floats in [0, 1])."""
    if _PILImage is None:
        raise ImportError("add_embedding(label_img=...) needs Pillow: pip install pillow")
    per_row = int(math.ceil(imgs.shape[0] ** 0.5))
    grid = _grid(imgs, ncols=per_row).transpose(1, 2, 0)
    side = grid.shape[1]
    square = np.zeros((side, side, 3))
    square[:grid.shape[0]] = grid
    _PILImage.fromarray(np.uint8(np.clip(square * 255, 0, 255))).save(
        os.path.join(path, "sprite.png"), format="PNG")


# ---- model graphs (TensorBoard's graph dashboard) -------------------------------------------
def _shape_attr(value) -> attr_value_pb2.AttrValue:
    shapes = [tensor_shape_pb2.TensorShapeProto(
        dim=[tensor_shape_pb2.TensorShapeProto.Dim(size=int(n)) for n in t.shape])
        for t in _tensor_metas(value)]
    return attr_value_pb2.AttrValue(list=attr_value_pb2.AttrValue.ListValue(shape=shapes))


def _tensor_metas(value) -> list:
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        return [value]
    if isinstance(value, (list, tuple)):
        return [m for v in value for m in _tensor_metas(v)]
    return []


def _graph_def(model, inputs) -> tuple:
    """(GraphDef, RunMetadata) of ``model`` traced with ember.fx, each node with the
    shapes its outputs have on ``inputs``."""
    gm = symbolic_trace(model)
    with ember.no_grad():
        ShapeProp(gm).propagate(*inputs)
    root = type(model).__name__
    names, nodes = {}, []
    for n in gm.graph.nodes:
        if n.op == "placeholder":
            name, op = f"input/{n.name}", "IO Node"
        elif n.op == "output":
            name, op = f"output/{n.name}", "IO Node"
        elif n.op == "call_module":
            sub = gm.get_submodule(n.target)
            name, op = f"{root}/{type(sub).__name__}[{n.target}]/{n.name}", type(sub).__name__
        elif n.op == "get_attr":
            name, op = f"{root}/{n.name}", "prim::GetAttr"
        else:
            target = n.target if isinstance(n.target, str) else getattr(
                n.target, "__name__", str(n.target))
            name, op = f"{root}/{n.name}", f"{n.op}::{target}"
        names[n] = name
        attr = {"attr": attr_value_pb2.AttrValue(s=str(n.target).encode())}
        meta = n.meta.get("tensor_meta")
        if meta is not None:
            attr["_output_shapes"] = _shape_attr(meta)
        nodes.append(node_def_pb2.NodeDef(name=name, op=op, device="/device:CPU:0",
                                          input=[names[i] for i in n.all_input_nodes],
                                          attr=attr))
    # (no per-node timings: the graph dashboard shows the structure)
    stats = config_pb2.RunMetadata(step_stats=step_stats_pb2.StepStats(
        dev_stats=[step_stats_pb2.DeviceStepStats(device="/device:CPU:0")]))
    return graph_pb2.GraphDef(node=nodes, versions=versions_pb2.VersionDef(producer=22)), stats


class SummaryWriter:
    """Writes TensorBoard event files into ``log_dir`` (default:
    ``runs/<date>_<host><comment>``), as ``torch.utils.tensorboard.SummaryWriter``."""

    def __init__(self, log_dir=None, comment: str = "", purge_step=None, max_queue: int = 10,
                 flush_secs: int = 120, filename_suffix: str = ""):
        if not log_dir:
            stamp = datetime.now().strftime("%b%d_%H-%M-%S")
            log_dir = os.path.join("runs", stamp + "_" + socket.gethostname() + comment)
        self.log_dir = str(log_dir)
        self.purge_step = purge_step
        self.max_queue = max_queue
        self.flush_secs = flush_secs
        self.filename_suffix = filename_suffix
        self.file_writer = None
        self.all_writers: dict = {}
        self._get_file_writer()

    def _get_file_writer(self) -> FileWriter:
        if self.file_writer is None or not self.all_writers:
            self.file_writer = FileWriter(self.log_dir, self.max_queue, self.flush_secs,
                                          self.filename_suffix)
            self.all_writers = {self.file_writer.get_logdir(): self.file_writer}
            if self.purge_step is not None:
                self.file_writer.add_event(Event(step=self.purge_step,
                                                 session_log=_session_start()))
                self.purge_step = None
        return self.file_writer

    def get_logdir(self) -> str:
        return self.log_dir

    def add_scalar(self, tag: str, scalar_value, global_step=None, walltime=None,
                   new_style: bool = False, double_precision: bool = False) -> None:
        """Log one number (a Python number, a 1-element tensor or array)."""
        value = _scalar(scalar_value)
        if new_style:
            dtype = "DT_DOUBLE" if double_precision else "DT_FLOAT"
            field = "double_val" if double_precision else "float_val"
            tensor = tensor_pb2.TensorProto(dtype=dtype, tensor_shape=
                                            tensor_shape_pb2.TensorShapeProto(),
                                            **{field: [value]})
            meta = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(
                plugin_name="scalars"))
            summary = Summary(value=[Summary.Value(tag=tag, tensor=tensor, metadata=meta)])
        else:
            summary = Summary(value=[Summary.Value(tag=tag, simple_value=value)])
        self._get_file_writer().add_summary(summary, global_step, walltime)

    def add_scalars(self, main_tag: str, tag_scalar_dict: dict, global_step=None,
                    walltime=None) -> None:
        """Log several series under ``main_tag`` (one event file per series, in
        ``log_dir/<main_tag>_<tag>``, as PyTorch)."""
        walltime = time.time() if walltime is None else walltime
        fw_logdir = self._get_file_writer().get_logdir()
        for tag, value in tag_scalar_dict.items():
            path = fw_logdir + "/" + main_tag.replace("/", "_") + "_" + tag
            fw = self.all_writers.get(path)
            if fw is None:
                fw = self.all_writers[path] = FileWriter(path, self.max_queue,
                                                         self.flush_secs,
                                                         self.filename_suffix)
            fw.add_summary(Summary(value=[Summary.Value(tag=main_tag,
                                                        simple_value=_scalar(value))]),
                           global_step, walltime)

    def add_histogram(self, tag: str, values, global_step=None, bins="tensorflow",
                      walltime=None, max_bins=None) -> None:
        """Log the distribution of ``values`` (``bins``: "tensorflow", a number or edges,
        as ``numpy.histogram`` takes them)."""
        hist = _histogram(_numpy(values), bins, max_bins)
        self._get_file_writer().add_summary(Summary(value=[Summary.Value(tag=tag,
                                                                         histo=hist)]),
                                            global_step, walltime)

    def add_image(self, tag: str, img_tensor, global_step=None, walltime=None,
                  dataformats: str = "CHW") -> None:
        """Log an image: floats in [0, 1] or uint8 in [0, 255], layout ``dataformats``."""
        img = _to_hwc(_numpy(img_tensor), dataformats)
        self._get_file_writer().add_summary(_image_summary(tag, img), global_step, walltime)

    def add_images(self, tag: str, img_tensor, global_step=None, walltime=None,
                   dataformats: str = "NCHW") -> None:
        """Log a batch of images as one grid."""
        self.add_image(tag, img_tensor, global_step, walltime, dataformats)

    def add_figure(self, tag: str, figure, global_step=None, close: bool = True,
                   walltime=None) -> None:
        """Log a matplotlib figure (or a list of them) as an image."""
        figures = figure if isinstance(figure, list) else [figure]
        imgs = []
        for fig in figures:
            fig.canvas.draw()
            imgs.append(np.asarray(fig.canvas.buffer_rgba())[:, :, :3])
            if close:
                fig.clear()
        img = imgs[0] if len(imgs) == 1 else _grid(np.stack(imgs).transpose(0, 3, 1, 2)
                                                   ).transpose(1, 2, 0)
        self._get_file_writer().add_summary(_image_summary(tag, img), global_step, walltime)

    def add_text(self, tag: str, text_string: str, global_step=None, walltime=None) -> None:
        """Log a (markdown) text."""
        self._get_file_writer().add_summary(_text_summary(tag, text_string), global_step,
                                            walltime)

    def add_graph(self, model, input_to_model=None, verbose: bool = False,
                  use_strict_trace: bool = True) -> None:
        """Log the graph of ``model`` (an ``nn.Module``), traced with ``ember.fx`` and run
        on ``input_to_model`` (a tensor or a tuple of them) for its shapes. Node names and
        ops are ember's (``Net/Linear[fc1]/fc1``, ``call_function::relu``), not
        TorchScript's."""
        inputs = () if input_to_model is None else (
            tuple(input_to_model) if isinstance(input_to_model, (list, tuple))
            else (input_to_model,))
        try:
            graph, stats = _graph_def(model, inputs)
        except Exception:
            print("Error occurs, No graph saved")
            raise
        if verbose:
            print(graph)
        fw = self._get_file_writer()
        fw.add_event(Event(graph_def=graph.SerializeToString()))
        fw.add_event(Event(tagged_run_metadata=TaggedRunMetadata(
            tag="step1", run_metadata=stats.SerializeToString())))

    def add_embedding(self, mat, metadata=None, label_img=None, global_step=None,
                      tag="default", metadata_header=None) -> None:
        """Log points for TensorBoard's projector: ``mat`` (N, D) as
        ``<step>/<tag>/tensors.tsv``, ``metadata`` (N labels, or rows under
        ``metadata_header``) as ``metadata.tsv``, ``label_img`` (N, C, H, W) as a
        ``sprite.png``, listed in the log directory's ``projector_config.pbtxt``."""
        mat = _numpy(mat)
        step = 0 if global_step is None else int(global_step)
        subdir = f"{step:05d}/{_projector_dir_name(tag)}"
        logdir = self._get_file_writer().get_logdir()
        path = os.path.join(logdir, subdir)
        if os.path.exists(path):
            if not os.path.isdir(path):
                raise ValueError(f"Path: `{path}` exists, but is a file. Cannot proceed.")
            print("warning: Embedding dir exists, did you set global_step for "
                  "add_embedding()?")
        else:
            os.makedirs(path)
        info = EmbeddingInfo(tensor_name=f"{tag}:{step:05d}",
                             tensor_path=subdir + "/tensors.tsv")
        if metadata is not None:
            if mat.shape[0] != len(metadata):
                raise AssertionError("#labels should equal with #data points")
            if metadata_header:
                if len(metadata_header) != len(metadata[0]):
                    raise AssertionError("len of header must be equal to the number of "
                                         "columns in metadata")
                lines = ["\t".join(str(e) for e in row)
                         for row in [metadata_header] + list(metadata)]
            else:
                lines = [str(x) for x in metadata]
            _write_text(os.path.join(path, "metadata.tsv"), lines)
            info.metadata_path = subdir + "/metadata.tsv"
        if label_img is not None:
            imgs = _numpy(label_img)
            if mat.shape[0] != imgs.shape[0]:
                raise AssertionError("#images should equal with #data points")
            _write_sprite(imgs, path)
            info.sprite.image_path = subdir + "/sprite.png"
            info.sprite.single_image_dim.extend([imgs.shape[3], imgs.shape[2]])
        if mat.ndim != 2:
            raise AssertionError("mat should be 2D, where mat.size(0) is the number of data "
                                 "points")
        _write_text(os.path.join(path, "tensors.tsv"),
                    ["\t".join(str(v) for v in row.tolist()) for row in mat])
        # the configuration lists every embedding logged so far (rewritten whole)
        if not hasattr(self, "_projector_config"):
            self._projector_config = ProjectorConfig()
        self._projector_config.embeddings.extend([info])
        with open(os.path.join(logdir, "projector_config.pbtxt"), "w",
                  encoding="utf-8") as f:
            f.write(text_format.MessageToString(self._projector_config))

    def add_pr_curve(self, tag: str, labels, predictions, global_step=None,
                     num_thresholds: int = 127, weights=None, walltime=None) -> None:
        """Log a precision-recall curve of ``predictions`` (probabilities in [0, 1])
        against the 0/1 ``labels``, at ``num_thresholds`` (at most 127) thresholds."""
        n = min(int(num_thresholds), 127)
        data = _pr_data(_numpy(labels), _numpy(predictions), n,
                        None if weights is None else _numpy(weights))
        self._get_file_writer().add_summary(_pr_summary(tag, data, n), global_step,
                                            walltime)

    def add_pr_curve_raw(self, tag: str, true_positive_counts, false_positive_counts,
                         true_negative_counts, false_negative_counts, precision, recall,
                         global_step=None, num_thresholds: int = 127, weights=None,
                         walltime=None) -> None:
        """Log a precision-recall curve from counts computed elsewhere (one value per
        threshold in each)."""
        data = np.stack([_numpy(a).astype(np.float64) for a in (
            true_positive_counts, false_positive_counts, true_negative_counts,
            false_negative_counts, precision, recall)])
        self._get_file_writer().add_summary(
            _pr_summary(tag, data, min(int(num_thresholds), 127)), global_step, walltime)

    def add_hparams(self, hparam_dict: dict, metric_dict: dict, hparam_domain_discrete=None,
                    run_name=None, global_step=None) -> None:
        """Log one run's hyperparameters and metric values for the hparams dashboard (in a
        sub-directory ``run_name``, by default the time), the metrics also as scalars."""
        if type(hparam_dict) is not dict or type(metric_dict) is not dict:
            raise TypeError("hparam_dict and metric_dict should be dictionary.")
        summaries = _hparams_summaries(hparam_dict, metric_dict, hparam_domain_discrete)
        logdir = os.path.join(self._get_file_writer().get_logdir(),
                              run_name or str(time.time()))
        with SummaryWriter(log_dir=logdir) as w:
            for summary in summaries:
                w.file_writer.add_summary(summary, global_step)
            for k, v in metric_dict.items():
                w.add_scalar(k, v, global_step)

    def flush(self) -> None:
        """Write everything queued to disk."""
        for w in self.all_writers.values():
            w.flush()

    def close(self) -> None:
        for w in self.all_writers.values():
            w.flush()
            w.close()
        self.file_writer = None
        self.all_writers = {}

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _session_start():
    from_proto = Event().session_log
    from_proto.status = from_proto.START
    return from_proto
