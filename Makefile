# omnic: thin wrapper over CMake. `make demo` and `make test` work on a fresh Debian 12
# machine: both run scripts/setup.sh first.
JOBS ?= 2
PY := /usr/bin/python3
BUILD := build/release
ASAN := build/asan
DEMO := build/demo/tiny-llama
DEMO_VL := build/demo/tiny-llava
DEMO_AU := build/demo/tiny-phi4mm
DEMO_G3N := build/demo/tiny-gemma3n
DEMO_WAV := tests/golden/phi4mm_audio/model/clip.wav

.PHONY: all setup build asan demo test bench clean

all: build

setup:
	@bash scripts/setup.sh

build: setup
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release >/dev/null
	@cmake --build $(BUILD) -j$(JOBS)

asan: setup
	@cmake -S . -B $(ASAN) -DCMAKE_BUILD_TYPE=Debug -DOMNIC_SANITIZE=ON >/dev/null
	@cmake --build $(ASAN) -j$(JOBS)

demo: build
	@$(PY) tools/mktiny.py --family llama --out $(DEMO) --seed 0
	$(BUILD)/omnic inspect -m $(DEMO)
	$(BUILD)/omnic run -m $(DEMO) -p "Tell me a story about a fox." -n 32
	@$(PY) tools/mktiny.py --family llava --vision clip --text llama --out $(DEMO_VL) --seed 0
	$(BUILD)/omnic inspect -m $(DEMO_VL)
	$(BUILD)/omnic run -m $(DEMO_VL) --image tests/data/demo.png -p "What is in this picture?" -n 32
	@$(PY) tools/mktiny.py --family phi4mm --out $(DEMO_AU) --seed 0
	$(BUILD)/omnic inspect -m $(DEMO_AU)
	$(BUILD)/omnic run -m $(DEMO_AU) --audio $(DEMO_WAV) -p "Transcribe the audio." -n 16
	$(BUILD)/omnic run -m $(DEMO_AU) --image tests/data/demo.png --audio $(DEMO_WAV) -p "Describe both." -n 16
	@$(PY) tools/mktiny.py --family gemma3n --out $(DEMO_G3N) --seed 0
	$(BUILD)/omnic run -m $(DEMO_G3N) --audio $(DEMO_WAV) -p "Transcribe the audio." -n 16

test: setup
	@bash scripts/test.sh

bench: build
	$(BUILD)/bench_ops

clean:
	rm -rf build
