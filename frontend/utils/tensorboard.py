"""``ember.utils.tensorboard``: ``SummaryWriter`` logging scalars, histograms, images and
text for TensorBoard, over the ``tensorboard`` package (its protocol buffers and event-file
writer), as ``torch.utils.tensorboard``. Install it with ``pip install tensorboard``
(``ember-tensor[tensorboard]``); without it, importing this module raises ImportError, as
PyTorch's does.

>>> from ember.utils.tensorboard import SummaryWriter
>>> with SummaryWriter("runs/exp1") as w:
...     for step in range(3):
...         w.add_scalar("loss", 1.0 / (step + 1), step)
"""
from __future__ import annotations

import io
import os
import socket
import time
from datetime import datetime

import numpy as np

from ember.dispatcher import dtypes as D
from ember.dispatcher.core import TensorBase

try:
    import tensorboard  # noqa: F401  (the optional dependency this module writes through)
    from tensorboard.compat.proto import tensor_pb2, tensor_shape_pb2
    from tensorboard.compat.proto.event_pb2 import Event
    from tensorboard.compat.proto.summary_pb2 import HistogramProto, Summary, SummaryMetadata
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
        raise NotImplementedError("SummaryWriter.add_graph(): ember has no graph tracer yet "
                                  "(it arrives with ember.fx / ember.compile); log scalars, "
                                  "histograms and images instead.")

    def add_embedding(self, mat, metadata=None, label_img=None, global_step=None,
                      tag="default", metadata_header=None) -> None:
        raise NotImplementedError("SummaryWriter.add_embedding(): the projector plugin is not "
                                  "supported by ember's writer.")

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
