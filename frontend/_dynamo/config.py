"""``ember._dynamo.config``: settings programs assign around ``ember.compile``. ember's
capture keys graphs by structure and caches them globally, so these are accepted and
kept, and read by nothing but ``cache_size_limit``'s documentation of PyTorch's default."""

#: PyTorch's per-function recompile limit (ember caches by structure: no limit applies)
cache_size_limit = 8
recompile_limit = 8
accumulated_cache_size_limit = 256
suppress_errors = False
verbose = False
capture_scalar_outputs = False
capture_dynamic_output_shape_ops = False
automatic_dynamic_shapes = True
assume_static_by_default = True
optimize_ddp = True
