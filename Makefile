# Two commands set everything up on a fresh machine:
#   make demo   — runs ember's main job (creates and fills .venv first if missing)
#   make test   — runs the test suite (same)
PY_SYS ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
VENV_STAMP := $(VENV)/.ember-venv
CPU_STAMP  := $(VENV)/.ember-cpu-built
# the op definitions: the cpu and cuda elementwise kernels are generated from them at build time
OPS_SRC    := $(wildcard dispatcher/defs/*.py dispatcher/codegen/*.py) dispatcher/schema.py dispatcher/expr.py
CPU_SRC    := $(wildcard backends/cpu/csrc/*.cpp backends/cpu/csrc/*.h dispatcher/include/ember/*) $(OPS_SRC) \
              backends/cpu/CMakeLists.txt backends/cpu/pyproject.toml
EXAMPLE_STAMP := $(VENV)/.ember-example-installed
CUDA_STAMP := $(VENV)/.ember-cuda-built
CUDA_SRC   := $(wildcard backends/cuda/csrc/* dispatcher/include/ember/*) $(OPS_SRC) backends/cuda/CMakeLists.txt \
              backends/cuda/pyproject.toml

.PHONY: demo test bench docs build clean conformance fuzz

$(VENV_STAMP): pyproject.toml backends/opencl/pyproject.toml
	test -x $(PY) || $(PY_SYS) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip
	# build tools for the editable native backend (built without isolation for speed)
	$(PIP) install --quiet "scikit-build-core>=0.10" "pybind11>=2.12" ninja numpy
	$(PIP) install --quiet -e ".[test,demo]"
	# the OpenCL backend (pure Python + OpenCL C; PoCL gives a CPU OpenCL device from pip)
	$(PIP) install --quiet -e backends/opencl
	touch $@

$(CPU_STAMP): $(VENV_STAMP) $(CPU_SRC)
	$(PIP) install --quiet --no-build-isolation -e "backends/cpu[onednn]"
	touch $@

# the CUDA backend compiles with nvcc when it is found (no GPU needed to build); without
# nvcc the plugin installs, loads and reports "not built"
$(CUDA_STAMP): $(VENV_STAMP) $(CUDA_SRC)
	$(PIP) install --quiet --no-build-isolation -e "backends/cuda[nvrtc]"
	touch $@

# the plugin template (examples/plugin-template): a NumPy reference backend, device "example"
$(EXAMPLE_STAMP): $(VENV_STAMP) examples/plugin-template/pyproject.toml
	$(PIP) install --quiet --no-deps --no-build-isolation -e examples/plugin-template
	touch $@

build: $(CPU_STAMP) $(CUDA_STAMP) $(EXAMPLE_STAMP)

demo: $(CPU_STAMP)
	$(PY) examples/train_digits.py

test: $(CPU_STAMP) $(CUDA_STAMP) $(EXAMPLE_STAMP)
	$(PY) -m pytest

# the backend conformance kit on the CPU backend and the template device
conformance: $(CPU_STAMP) $(EXAMPLE_STAMP)
	$(PY) -m ember.testing cpu
	$(PY) -m ember.testing example

# the op fuzz suite, long: every op against PyTorch on cpu and opencl, a random seed
FUZZ_SEED ?= $(shell date +%s)
FUZZ_EXAMPLES ?= 100
fuzz: $(CPU_STAMP)
	$(PY) tests/fuzz/opfuzz.py --drive --device cpu --seed $(FUZZ_SEED) --examples $(FUZZ_EXAMPLES) --log fuzz-cpu.jsonl
	$(PY) tests/fuzz/opfuzz.py --drive --device opencl --seed $(FUZZ_SEED) --examples $(FUZZ_EXAMPLES) --log fuzz-opencl.jsonl

bench: $(CPU_STAMP)
	$(PY) bench/bench_ops.py
	$(PY) bench/bench_training.py
	$(PY) bench/bench_models.py
	$(PY) bench/bench_compile.py
	$(PY) bench/bench_multiprocessing.py
	$(PY) bench/bench_ddp.py
	$(PY) bench/bench_opencl.py
	$(PY) bench/bench_memory.py

docs: $(VENV_STAMP)
	$(PIP) install --quiet mkdocs
	$(VENV)/bin/mkdocs build --strict

clean:
	rm -rf $(VENV) build backends/cpu/build backends/cuda/build site
