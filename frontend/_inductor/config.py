"""``ember._inductor.config``: the Inductor settings public programs assign, by PyTorch's
names and defaults (the ``triton``, ``cpp`` and ``trace`` sections too). A name not
defined here raises ``AttributeError``, as PyTorch's module does for names it lacks;
``patch`` sets some for a block or a call.

ember's compiler is not Inductor: it generates one kernel per fused group with no
autotuning, Triton or CUDA graphs, so these settings are kept and read by nothing.
"""
from ember._config_module import Section, install

coordinate_descent_tuning = False
coordinate_descent_check_all_directions = False
coordinate_descent_search_radius = 1
fx_graph_cache = True
fx_graph_remote_cache = None
autotune_local_cache = True
autotune_remote_cache = None
bundled_autotune_remote_cache = None
freezing = False
freezing_discard_parameters = False
max_autotune = False
max_autotune_gemm = False
max_autotune_pointwise = False
max_autotune_gemm_backends = "ATEN,TRITON,CPP"
epilogue_fusion = True
aggressive_fusion = False
force_fuse_int_mm_with_mul = False
use_mixed_mm = True
cpp_wrapper = False
debug = False
split_reductions = True
benchmark_kernel = False
benchmark_fusion = False
benchmark_epilogue_fusion = True
fallback_random = False
shape_padding = True
comprehensive_padding = True
permute_fusion = False
reorder_for_locality = True
size_asserts = True
nan_asserts = False
emulate_precision_casts = False
conv_1x1_as_mm = False
layout_optimization = True
keep_output_stride = True
unroll_reductions_threshold = 8
pattern_matcher = True
implicit_fallbacks = True
allow_buffer_reuse = True
inplace_buffers = True
memory_planning = False
use_fast_math = False
online_softmax = True
max_fusion_size = 64
joint_graph_constant_folding = True
generate_intermediate_hooks = False

triton = Section(
    "ember._inductor.config.triton", cudagraphs=False, cudagraph_trees=True,
    cudagraph_skip_dynamic_graphs=False, unique_kernel_names=True,
    descriptive_names="original_aten", autotune_pointwise=True, autotune_cublasLt=True,
    max_tiles=None, persistent_reductions=True, multi_kernel=0, divisible_by_16=True,
    use_block_ptr=False, enable_persistent_tma_matmul=False, cooperative_reductions=False)
cpp = Section(
    "ember._inductor.config.cpp", threads=-1, simdlen=None, enable_kernel_profile=False,
    weight_prepack=True, dynamic_threads=False, min_chunk_size=512,
    enable_unsafe_math_opt_flag=False, enable_floating_point_contract_flag="off")
trace = Section(
    "ember._inductor.config.trace", enabled=False, debug_dir=None, graph_diagram=False,
    compile_profile=False)

install(__name__)
