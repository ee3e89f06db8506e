"""``ember._dynamo.config``: settings programs assign around ``ember.compile``, by
PyTorch's names and defaults. A name PyTorch's module does not define here raises
``AttributeError``, as there; ``patch`` sets some for a block or a call.

ember honours ``disable`` (compiled functions run eagerly). The rest steer TorchDynamo's
bytecode analysis, which ember does not have: its capture is lazy and keys graphs by
structure in one global cache (docs/compile.md), so they are kept and read by nothing.
"""
from ember._config_module import install

#: True: every compiled function runs eagerly (honoured)
disable = False
#: PyTorch's per-function recompile limit (ember caches by structure: no limit applies)
cache_size_limit = 8
recompile_limit = 8
accumulated_cache_size_limit = 256
accumulated_recompile_limit = 256
suppress_errors = False
verbose = False
capture_scalar_outputs = False
capture_dynamic_output_shape_ops = False
automatic_dynamic_shapes = True
assume_static_by_default = True
optimize_ddp = True
specialize_int = False
specialize_float = False
force_parameter_static_shapes = True
force_nn_module_property_static_shapes = True
allow_unspec_int_on_nn_module = False
inline_inbuilt_nn_modules = True
error_on_recompile = False
guard_nn_modules = True
dynamic_shapes = True
skip_nnmodule_hook_guards = True
raise_on_ctx_manager_usage = True
log_compilation_metrics = True
compiled_autograd = False
use_lazy_graph_module = True
capture_autograd_function = True
trace_numpy = True
numpy_default_float = "float64"
rewrite_assert_with_torch_assert = True
cudagraph_backend_keep_input_mutation = False
replay_record_enabled = False

install(__name__)
