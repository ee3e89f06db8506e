"""PyTorch public names ember deliberately does not provide, each with the reason.

Reviewed list: a name belongs here only when a PyTorch program on a CPU/OpenCL machine would
not reach for it (TorchScript's C++ IR, quantization, CUDA/XPU/IPU/XLA internals, removed or
private ATen entry points that happen to be exported). Everything else counts as missing until
ember has it. ``tests/api/test_api_coverage.py`` checks each entry still names a real PyTorch
name and that none of them is provided after all.
"""

_JIT_IR = ("TorchScript's C++ IR and type system (torch.jit internals); ember runs eagerly "
           "and its graph IR is ember.compile's, not TorchScript's")
_QUANT = "quantized tensors are out of scope (no quantized dtypes in ember)"
_SPARSE_COMPRESSED = ("compressed sparse layouts (CSR/CSC/BSR/BSC) are out of scope; ember's "
                      "sparse support is COO")
_ATEN_INTERNAL = ("an ATen-internal entry point exported by accident (used by autograd "
                  "formulas or SyncBatchNorm's CUDA path), not documented for programs")
_OTHER_DEVICE = "a device ember has no backend for (IPU, XLA, XPU, MTIA, MAIA, Vulkan, MKLDNN)"
_REMOVED = "removed from PyTorch: calling it raises there too"
_DATAPIPES = ("the legacy DataPipes API (deprecated, frozen in torchdata); ember's data "
              "loading is Dataset/Sampler/DataLoader")
_DIST_INTERNAL = "c10d internals (process-group options structs, stores, rendezvous, DeviceMesh)"

OMITTED = {
    "torch": {
        **{n: _JIT_IR for n in (
            "AggregationType", "AliasDb", "AnyType", "Argument", "ArgumentSpec", "AwaitType",
            "Block", "BoolType", "BufferDict", "CallStack", "Capsule", "ClassType", "Code",
            "CompilationUnit", "CompleteArgumentSpec", "ComplexType", "ConcreteModuleType",
            "ConcreteModuleTypeBuilder", "DeepCopyMemoTable", "DeviceObjType", "DictType",
            "EnumType", "ErrorReport", "ExecutionPlan", "FileCheck", "FloatType",
            "FunctionSchema", "FutureType", "Gradient", "Graph",
            "GraphExecutorState", "IODescriptor", "InferredType", "IntType", "InterfaceType",
            "ListType", "LiteScriptModule", "LockingLogger", "ModuleDict", "Node", "NoneType",
            "NoopLogger", "NumberType", "OperatorInfo", "OptionalType", "ParameterDict",
            "PyObjectType", "RRefType", "ScriptClass", "ScriptClassFunction", "ScriptDict",
            "ScriptDictIterator", "ScriptDictKeyIterator", "ScriptFunction", "ScriptList",
            "ScriptListIterator", "ScriptMethod", "ScriptModule", "ScriptModuleSerializer",
            "ScriptObject", "ScriptObjectProperty", "StaticModule", "StreamObjType",
            "StringType", "TensorType", "TracingState", "TupleType", "Type", "UnionType", "Use",
            "Value", "import_ir_module", "import_ir_module_from_buffer", "parse_ir",
            "parse_schema", "parse_type_comment", "merge_type_from_type_comment",
            "unify_type_list", "fork", "wait", "Tag", "DispatchKey", "DispatchKeySet",
            "ExcludeDispatchKeyGuard", "PyTorchFileReader", "PyTorchFileWriter",
            "BenchmarkConfig", "BenchmarkExecutionStats", "ThroughputBenchmark",
            "autocast_increment_nesting", "autocast_decrement_nesting")},
        **{n: _QUANT for n in (
            "int_repr", "q_per_channel_axis", "q_per_channel_scales",
            "q_per_channel_zero_points", "q_scale", "q_zero_point", "qscheme",
            "choose_qparams_optimized")},
        **{n: _SPARSE_COMPRESSED for n in (
            "sparse_bsc_tensor", "sparse_compressed_tensor", "sparse_csr_tensor",
            "ccol_indices_copy", "col_indices_copy", "crow_indices_copy", "row_indices_copy")},
        **{n: _ATEN_INTERNAL for n in (
            "batch_norm_backward_elemt", "batch_norm_backward_reduce", "batch_norm_elemt",
            "batch_norm_gather_stats", "batch_norm_gather_stats_with_counts", "batch_norm_stats",
            "saddmm", "hspmm", "hsmm", "dsmm", "smm", "sspaddmm",
            "resize_as_sparse_", "hash_tensor", "slice_inverse")},
        **{n: _OTHER_DEVICE for n in (
            "get_autocast_ipu_dtype", "get_autocast_xla_dtype", "set_autocast_ipu_dtype",
            "set_autocast_ipu_enabled", "set_autocast_xla_dtype", "set_autocast_xla_enabled",
            "is_autocast_ipu_enabled", "is_autocast_xla_enabled")},
        "thread_safe_generator": "a private helper of torch.random re-exported by accident",
        **{n: "the __torch_function__ protocol, which ember does not have"
           for n in ("DisableTorchFunction", "DisableTorchFunctionSubclass")},
        "FatalError": "raised by PyTorch's C++ core on internal invariant failures only",
    },
    "Tensor": {
        **{n: _QUANT for n in (
            "int_repr", "q_per_channel_axis", "q_per_channel_scales",
            "q_per_channel_zero_points", "q_scale", "q_zero_point", "qscheme", "dequantize")},
        **{n: _SPARSE_COMPRESSED for n in (
            "ccol_indices", "col_indices", "crow_indices", "row_indices", "to_sparse_bsc",
            "to_sparse_bsr", "to_sparse_csc", "to_sparse_csr")},
        **{n: _OTHER_DEVICE for n in (
            "ipu", "xpu", "mtia", "to_mkldnn")},
        **{n: _REMOVED for n in ("reinforce", "volatile")},
        "index": "binds first-class dimensions of the functorch.dim prototype, not indexing",
        "name": "named tensors are a prototype API PyTorch marks unstable",
        **{n: _ATEN_INTERNAL for n in (
            "resize_as_sparse_", "sparse_resize_", "sparse_resize_and_clear_", "smm",
            "sspaddmm", "hash_tensor", "slice_inverse",
            "grad_dtype", "to_padded_tensor")},
    },
    "utils.data": {n: _DATAPIPES for n in (
        "DFIterDataPipe", "DataChunk", "IterDataPipe", "MapDataPipe", "argument_validation",
        "functional_datapipe", "guaranteed_datapipes_determinism", "non_deterministic",
        "runtime_validation", "runtime_validation_disabled")},
    "nn.functional": {
        "Callable": "typing re-export, not a PyTorch API",
        "Optional": "typing re-export, not a PyTorch API",
        "DType": "typing alias re-export, not a PyTorch API",
        "ScalingType": "an enum of the CUDA-only scaled_mm / grouped_mm kernels",
        "SwizzleType": "an enum of the CUDA-only scaled_mm / grouped_mm kernels",
    },
}
