# legalir pipelines. The Makefile only wires the `legalir` CLI; logic lives in the package.
#   make demo   set up, then BM25 on the real ACORD test split (shipped inside legalir), beside the paper
#   make test   set up, then run the test suite (2 workers; `make test-fast`: the inner loop; `make lint`)
SHELL := /bin/bash
.DEFAULT_GOAL := help

PYTHON   ?= python3
VENV     ?= .venv
EXTRAS   ?= cpu,test,lint
DATA_DIR ?= data
THREADS  ?= 2
BIN      := $(VENV)/bin
LEGALIR  := HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 $(BIN)/legalir
STAMP    := $(VENV)/.legalir-setup

.PHONY: help setup demo docs-figures test test-fast test-deep lint clean-outputs FORCE
FORCE:

help: ## list targets
	@grep -hE '^[a-zA-Z0-9_-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/' | sort | column -t -s $$'\t'
	@grep -hE '^#  [a-zA-Z%-]+ +' $(firstword $(MAKEFILE_LIST)) | sed 's/^#  //'

# ------------------------------------------------------------------ setup
setup: $(STAMP) ## create .venv and install legalir with everything it needs (idempotent)
	@$(BIN)/python scripts/jvm_archive.py --quiet  # the JVM's class archive, anew when Java or a jar changed

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --disable-pip-version-check -q --upgrade pip
	$(BIN)/python -m pip install --disable-pip-version-check -q -e ".[$(EXTRAS)]"
	$(BIN)/python -c "import legalir.base.jvm as j; j.start(); print('legalir: JVM ok, Java', j.autoclass('java.lang.System').getProperty('java.version'))"
	$(BIN)/python scripts/jvm_archive.py
	@touch $@

# ------------------------------------------------------------------ tests and static checks (docs/testing.md)
# TEST_WORKERS: pytest-xdist processes (`0`: one process, no xdist); a file's tests stay on one worker
# (--dist loadfile: its module fixtures, servers and JVM are built once); xdist's own order (docs/testing.md: handing
# out the longest files first measured slower). COVERAGE=1 measures line coverage of
# legalir (CI: .ci/run) into .coverage and prints the total.
# TEST_ENV: offline Hugging Face, and compiled modules cached (`PYTHONDONTWRITEBYTECODE` emptied where the
# environment sets it: every worker and each of the suite's ~140 child processes would otherwise compile legalir
# and pytest rewrite every test module again); one OpenMP thread a process (`OMP_NUM_THREADS=1`: the workers
# fill the cores already, and each torch or FAISS process's second thread only spun waiting for a core, 40 CPU-s
# a run; tests that vary torch's thread count set it themselves). Both measured in docs/testing.md
# TEST_TMP: the tests' temporary files (TMPDIR: pytest's tmp_path, tempfile) in memory, /dev/shm, where it is a
# writable folder with 8 GB free whose files may run (a test builds trec_eval there and runs it; Docker mounts
# /dev/shm noexec) (a run writes 4-8 GB, model checkpoints most, each file synced: on this machine's virtual disk
# 36-48 core-s of I/O wait a run, 18-24 in memory; docs/testing.md); else the system's. `TEST_TMP=` keeps it
# (looked at once, and only by the targets that use it: the first use sets it for the rest)
TEST_TMP     ?= $(eval TEST_TMP := $(shell d=/dev/shm; [ -d $$d ] && [ -w $$d ] && \
  [ "$$(df -Pk $$d | awk 'NR==2 {print $$4}')" -ge 8000000 ] 2>/dev/null && \
  f=$$(mktemp $$d/legalir-exec-XXXXXX) && { printf '\043!/bin/sh\n' > $$f && chmod +x $$f && $$f 2>/dev/null; r=$$?; \
  rm -f $$f; [ $$r = 0 ]; } && echo $$d/legalir-tests-$$(id -u)))$(TEST_TMP)
TEST_WORKERS ?= 2
TEST_ENV      = HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 PYTHONDONTWRITEBYTECODE= OMP_NUM_THREADS=1 \
  $(if $(TEST_TMP),TMPDIR=$(TEST_TMP))
TEST_PREP     = $(if $(TEST_TMP),mkdir -p $(TEST_TMP) &&)
PYTEST        = $(TEST_PREP) $(TEST_ENV) $(BIN)/python -m pytest -q \
  $(if $(filter 0,$(TEST_WORKERS)),,-n $(TEST_WORKERS) --dist loadfile) \
  $(if $(COVERAGE),--cov=legalir --cov-report=term:skip-covered --cov-report=json:coverage.json)
#: the inner loop: the modules that need no JVM, server, browser, model or Ray (formats, scoring against its
#: references, citations, filters, the architecture and documentation checks); docs/testing.md says what is left out
FAST_TESTS = tests/test_architecture.py tests/test_cli_docs.py tests/test_suite_rules.py tests/test_trec_format.py \
  tests/test_trec_fast.py tests/test_score_parsing.py tests/test_eval.py tests/test_eval_parity.py \
  tests/test_eval_irm.py tests/test_eval_stats.py tests/test_eval_regressions.py tests/test_fusion.py \
  tests/test_citations.py

test: setup ## set up, then run the test suite (TEST_WORKERS=2 processes; COVERAGE=1 measures coverage)
	$(PYTEST) $(PYTEST_ARGS)

test-fast: setup ## the inner loop (under a minute): the tests that start no JVM, server, model or browser
	$(PYTEST) $(FAST_TESTS) $(PYTEST_ARGS)

lint: setup ## static checks: ruff (pyflakes, import order, pyupgrade, pycodestyle, noqa) and mypy (pyproject.toml)
	$(BIN)/ruff check legalir tests scripts
	$(BIN)/mypy

test-deep: setup ## the scoring, file round-trip and index-update property tests with thousands of generated examples (HYPOTHESIS_EXAMPLES=4000)
	$(TEST_PREP) LEGALIR_HYPOTHESIS_PROFILE=deep LEGALIR_HYPOTHESIS_EXAMPLES=$(or $(HYPOTHESIS_EXAMPLES),4000) \
	  $(TEST_ENV) $(BIN)/python -m pytest -q --hypothesis-show-statistics \
	  tests/test_eval_properties.py tests/test_roundtrip_properties.py tests/test_index_update.py $(PYTEST_ARGS)

# ------------------------------------------------------------------ pipelines
# Each dataset module declares how its pipeline runs (legalir/datasets/*.py: `pipeline = Pipeline(...)`);
# `legalir datasets --make` prints that as make variables, included here, and one macro per pipeline kind
# defines every dataset's targets. A new dataset module gets them without an edit here.
# Per dataset D (`legalir datasets` lists them: acord, barexam, housing, scalr, crumb):
#  convert-D        published files in $(DATA_DIR)/<dataset> -> collections/<dataset>
#  index-D          Lucene index (one per partition when the dataset is partitioned)
#  run-D            runs on the dataset's topic sets, scored with its protocol beside the papers' rows
#  eval-D           the same table from the saved scores
#  tune-D           BM25 k1/b grid on the dataset's training topic sets (never test)
#  index-D-dense    encode with ENCODER (default: the bundled MiniLM) and build the FAISS index
#  run-D-dense      dense runs, scored
#  run-D-hybrid     BM25 + dense fusion (tuned on the training sets where the dataset has them, else RRF)
# Each target builds what it needs first and skips what is up to date:
#   collections/<dataset>/manifest.json <- $(DATA_DIR)/<dataset>;  indexes/D/bm25.built <- collection
#   runs/D/bm25.<topics>.trec <- index + topics;  results/D/bm25.<topics>.json <- run + qrels
.SECONDEXPANSION:
RUN_DEPTH     ?= 1000
PASSAGE_DEPTH ?= 2000
DATASETS_MK   := .make/datasets.mk

ifneq ($(filter-out help setup test test-fast test-deep lint clean-outputs links%,$(or $(MAKECMDGOALS),help)),)
include $(DATASETS_MK)
endif
$(DATASETS_MK): $(STAMP) $(wildcard legalir/datasets/*.py)
	@mkdir -p $(@D)
	@$(LEGALIR) datasets --make > $@.tmp && mv $@.tmp $@

# the published files a collection is made from (globs declared by the dataset)
sources = $(wildcard $(addprefix $(DATA_DIR)/$($(1)_DATASET)/,$(2)))

# ---- collection and Lucene index (every kind but passages); $(1) = D
define COLLECTION_RULES
.PHONY: convert-$(1) index-$(1)
convert-$(1): $($(1)_COLLECTION)/manifest.json
index-$(1): indexes/$(1)/bm25.built

$($(1)_COLLECTION)/manifest.json: $$(call sources,$(1),$($(1)_SOURCES)) | $(STAMP)
	$$(LEGALIR) convert $($(1)_DATASET) --data-dir $$(DATA_DIR) --out $($(1)_COLLECTION) $$($(1)_CONVERT_ARGS)

indexes/$(1)/bm25.built: $($(1)_COLLECTION)/manifest.json
	$$(LEGALIR) index $($(1)_COLLECTION) indexes/$(1)/bm25 --threads $$(THREADS)
	@touch $$@

# BM25 parameters are a prerequisite of the runs: a change of the dataset's k1/b re-runs the searches
runs/$(1)/bm25.params: FORCE
	@mkdir -p $$(@D); echo "$($(1)_BM25)" | cmp -s - $$@ || echo "$($(1)_BM25)" > $$@
endef

# ---- kind bm25: search every topic set, report beside the papers' rows
define BM25_RULES
.PHONY: run-$(1) eval-$(1) tune-$(1)
.PRECIOUS: runs/$(1)/bm25.%.trec
runs/$(1)/bm25.%.trec: indexes/$(1)/bm25.built runs/$(1)/bm25.params
	$$(LEGALIR) search indexes/$(1)/bm25 $($(1)_COLLECTION)/topics/$$*.jsonl $$@ -k $$(RUN_DEPTH) $($(1)_BM25) --threads $$(THREADS)

results/$(1)/bm25.%.json: runs/$(1)/bm25.%.trec
	$$(LEGALIR) report $($(1)_DATASET) $$< --qrels $$($(1)_QRELS_$$*) --results-dir results/$(1) > /dev/null

run-$(1): $(foreach t,$($(1)_TOPICS),results/$(1)/bm25.$(t).json)
	$$(LEGALIR) report $($(1)_DATASET) $$^ $(foreach t,$($(1)_TOPICS),--label "BM25 $(t)") --title "$($(1)_TITLE) ($($(1)_BM25_WORDS))"

eval-$(1): run-$(1)

tune-$(1): indexes/$(1)/bm25.built
	$$(LEGALIR) tune-bm25 $($(1)_DATASET) indexes/$(1)/bm25 --collection $($(1)_COLLECTION) $(foreach t,$($(1)_TUNE),--topics $(t))
endef

# ---- kind pool: rank each topic's own candidates with BM25 and TF-IDF
define POOL_RULES
.PHONY: run-$(1) eval-$(1)
runs/$(1)/bm25.%.trec: indexes/$(1)/bm25.built runs/$(1)/bm25.params
	$$(LEGALIR) rank-pool $($(1)_COLLECTION)/topics/$$*.jsonl $$@ --ranker bm25 --index indexes/$(1)/bm25 $($(1)_BM25)

runs/$(1)/tfidf.%.trec: $($(1)_COLLECTION)/manifest.json
	$$(LEGALIR) rank-pool $($(1)_COLLECTION)/topics/$$*.jsonl $$@ --ranker tfidf --collection $($(1)_COLLECTION)

run-$(1): $(foreach t,$($(1)_TOPICS),runs/$(1)/bm25.$(t).trec runs/$(1)/tfidf.$(t).trec)
	$(foreach t,$($(1)_TOPICS),$$(LEGALIR) report $($(1)_DATASET) runs/$(1)/bm25.$(t).trec runs/$(1)/tfidf.$(t).trec \
	  --qrels $($(1)_QRELS_$(t)) --results-dir results/$(1) --label "BM25 over the candidates" \
	  --label "TF-IDF cosine over the candidates" --title "$($(1)_TITLE)";)

eval-$(1): run-$(1)
endef

# ---- kind passages: one passage collection per part (e.g. CRUMB task), BM25, then MaxP where the topics ask
# for it. `make run-crumb PARTS=legal_qa` runs one part; the default is every part whose files are present.
define PASSAGE_PART_RULES
.PRECIOUS: collections/$(1)/$(2)/passage/manifest.json runs/$(1)/$(2)/bm25.passages.trec runs/$(1)/$(2)/bm25.trec
collections/$(1)/$(2)/passage/manifest.json: $$(call sources,$(1),$($(1)_$(2)_SOURCES)) | $(STAMP)
	$$(LEGALIR) convert $($(1)_DATASET) --data-dir $$(DATA_DIR) $($(1)_$(2)_OPTION) $($(1)_CONVERT) --out $$(@D)

indexes/$(1)/$(2)/passage/bm25.built: collections/$(1)/$(2)/passage/manifest.json
	$$(LEGALIR) index $$(<D) indexes/$(1)/$(2)/passage/bm25 --threads $$(THREADS)
	@touch $$@

runs/$(1)/$(2)/bm25.passages.trec: indexes/$(1)/$(2)/passage/bm25.built
	$$(LEGALIR) search indexes/$(1)/$(2)/passage/bm25 collections/$(1)/$(2)/passage/topics/test.jsonl $$@ -k $$(PASSAGE_DEPTH) $($(1)_BM25) --threads $$(THREADS)

runs/$(1)/$(2)/bm25.trec: runs/$(1)/$(2)/bm25.passages.trec
	$$(LEGALIR) maxp $$< $$@ --auto --collection collections/$(1)/$(2)/passage --tag bm25

results/$(1)/$(2)/%/bm25.json: runs/$(1)/$(2)/bm25.trec
	$$(LEGALIR) report $($(1)_DATASET) $$< --qrels collections/$(1)/$(2)/passage/qrels/$$*.txt --results-dir $$(@D) > /dev/null
endef

define PASSAGE_RULES
.PHONY: run-$(1) eval-$(1)
$(1)_RUN_PARTS = $$(or $$(PARTS),$$(TASK),$$(strip $$(foreach p,$($(1)_PARTS),$$(if $$(call sources,$(1),$$($(1)_$$(p)_SOURCES)),$$(p)))),$$(firstword $($(1)_PARTS)))
$(1)_RESULTS = $$(foreach p,$$($(1)_RUN_PARTS),$$(foreach q,$$($(1)_$$(p)_QRELS),results/$(1)/$$(p)/$$(q)/bm25.json))
run-$(1): $$$$($(1)_RESULTS)
	$$(LEGALIR) report $($(1)_DATASET) $$^ $$(foreach p,$$($(1)_RUN_PARTS),$$(foreach q,$$($(1)_$$(p)_QRELS),--label "BM25 $$(p) ($$(q) qrels)")) \
	  --title "$($(1)_TITLE) ($($(1)_BM25_WORDS)), $$(PASSAGE_DEPTH) passages"

eval-$(1): run-$(1)
$(foreach p,$($(1)_PARTS),$(eval $(call PASSAGE_PART_RULES,$(1),$(p))))
endef

# ---- dense retrieval (FAISS) and hybrid BM25 + dense runs, for every dataset declaring `dense=True`
# ENCODER: 'minilm' (the bundled all-MiniLM-L6-v2), a model folder or a Hub name; ENCODER_TAG names its
# outputs; INSTRUCTION: the {instruction} of instruction-following encoders; ENCODE_ARGS,
# SEARCH_DENSE_ARGS: extra options (e.g. --query-format, --batch-size); DENSE_INDEX: flat|hnsw|ivfpq.
ENCODER      ?= minilm
ENCODER_TAG  ?= minilm
HYBRID_TAG   ?= $(if $(filter minilm,$(ENCODER_TAG)),hybrid,hybrid-$(ENCODER_TAG))
INSTRUCTION  ?=
DENSE_INDEX  ?= flat
ENCODE_ARGS  ?=
SEARCH_DENSE_ARGS ?=

define DENSE_RULES
.PHONY: index-$(1)-dense run-$(1)-dense run-$(1)-hybrid
.PRECIOUS: runs/$(1)/$(ENCODER_TAG).%.trec runs/$(1)/$(HYBRID_TAG).%.trec
index-$(1)-dense: indexes/$(1)/dense/$(ENCODER_TAG).built

indexes/$(1)/dense/$(ENCODER_TAG).built: $($(1)_COLLECTION)/manifest.json
	$$(LEGALIR) encode $($(1)_COLLECTION) indexes/$(1)/embeddings/$(ENCODER_TAG) --encoder "$$(ENCODER)" $$(ENCODE_ARGS)
	$$(LEGALIR) index-dense indexes/$(1)/embeddings/$(ENCODER_TAG) indexes/$(1)/dense/$(ENCODER_TAG) --type $$(DENSE_INDEX)
	@touch $$@

runs/$(1)/$(ENCODER_TAG).%.trec: indexes/$(1)/dense/$(ENCODER_TAG).built
	$$(LEGALIR) search-dense indexes/$(1)/dense/$(ENCODER_TAG) $($(1)_COLLECTION)/topics/$$*.jsonl $$@ \
	  -k $$(RUN_DEPTH) --tag $(ENCODER_TAG) $$(if $$(INSTRUCTION),--instruction "$$(INSTRUCTION)") $$(SEARCH_DENSE_ARGS)

results/$(1)/$(HYBRID_TAG).tuning.json: $(foreach t,$($(1)_TUNE),runs/$(1)/bm25.$(t).trec runs/$(1)/$(ENCODER_TAG).$(t).trec)
	$$(LEGALIR) tune-fusion $($(1)_DATASET) --collection $($(1)_COLLECTION) $(foreach t,$($(1)_TUNE),--topics $(t)) \
	  --run 'runs/$(1)/bm25.{set}.trec' --run 'runs/$(1)/$(ENCODER_TAG).{set}.trec' -o $$@

runs/$(1)/$(HYBRID_TAG).%.trec: runs/$(1)/bm25.%.trec runs/$(1)/$(ENCODER_TAG).%.trec $(if $($(1)_TUNE),results/$(1)/$(HYBRID_TAG).tuning.json)
	$$(LEGALIR) fuse $$(word 1,$$^) $$(word 2,$$^) -o $$@ -k $$(RUN_DEPTH) --tag $(HYBRID_TAG) \
	  $(if $($(1)_TUNE),--params results/$(1)/$(HYBRID_TAG).tuning.json,--method rrf)

run-$(1)-dense: $(foreach t,$($(1)_TOPICS),runs/$(1)/$(ENCODER_TAG).$(t).trec)
	$(foreach t,$($(1)_TOPICS),$$(LEGALIR) report $($(1)_DATASET) runs/$(1)/$(ENCODER_TAG).$(t).trec \
	  --qrels $($(1)_QRELS_$(t)) --results-dir results/$(1) --label "$(ENCODER_TAG)" --title "$($(1)_TITLE): $(t) topics, dense retrieval ($(ENCODER_TAG))";)

run-$(1)-hybrid: $(foreach t,$($(1)_TOPICS),runs/$(1)/bm25.$(t).trec runs/$(1)/$(ENCODER_TAG).$(t).trec runs/$(1)/$(HYBRID_TAG).$(t).trec)
	$(foreach t,$($(1)_TOPICS),$$(LEGALIR) report $($(1)_DATASET) runs/$(1)/bm25.$(t).trec \
	  runs/$(1)/$(ENCODER_TAG).$(t).trec runs/$(1)/$(HYBRID_TAG).$(t).trec \
	  --qrels $($(1)_QRELS_$(t)) --results-dir results/$(1) \
	  --label "BM25 ($($(1)_BM25_WORDS))" --label "$(ENCODER_TAG)" --label "BM25 + $(ENCODER_TAG) ($(if $($(1)_TUNE),fusion tuned on $($(1)_TUNE),RRF k=60))" \
	  --title "$($(1)_TITLE): $(t) topics, BM25, dense and hybrid";)
endef

$(foreach d,$(DATASETS_BM25) $(DATASETS_POOL),$(eval $(call COLLECTION_RULES,$(d))))
$(foreach d,$(DATASETS_BM25),$(eval $(call BM25_RULES,$(d))))
$(foreach d,$(DATASETS_POOL),$(eval $(call POOL_RULES,$(d))))
$(foreach d,$(DATASETS_PASSAGES),$(eval $(call PASSAGE_RULES,$(d))))
$(foreach d,$(DATASETS_DENSE),$(eval $(call DENSE_RULES,$(d))))

# ---- ACORD rerankers: a cross-encoder fine-tuned on ACORD train with the paper's recipe (relevance
# levels oversampled to equal frequency, targets stars/4, BCE, AdamW wd 0.01, batch 64), started from the
# bundled all-MiniLM-L6-v2 with a new scoring head, trained on the short, medium and long wordings of the
# training queries; (learning rate, updates) picked by the mean over 3 seeds of judged-only NDCG@10 on
# valid (reranking the top 100 of BM25 and of MiniLM there), never on test. `make train-acord-ce` trains
# only when $(ACORD_CE) is absent (the model folder holds legalir-train.json: grid, choice, command,
# timings); killed, it resumes from its last save. The defaults are the grid that chose the shipped model
# (a GPU run: 6 cells at once; on 2 CPU cores use e.g. ACORD_CE_ARGS="... --jobs 1" and expect hours).
# `make run-acord-rerank` reranks the top $(RERANK_K) of BM25, the MiniLM bi-encoder and the hybrid run.
ACORD_CE        ?= models/acord-ce
ACORD_CE_VALID  ?= bm25 $(ENCODER_TAG)
ACORD_CE_ARGS   ?= --train-topics train --train-topics train.medium --train-topics train.long --valid-depth 100 \
  --lr 5e-4,1e-3 --checkpoints 100,200,300,500,750,1000,1500,2000 --seed 1,2,3 --max-length 256 --jobs 6 --save-every 500
RERANK_K        ?= 100
RERANK_ARGS     ?=
ACORD_RERANKED  ?= bm25 $(ENCODER_TAG) $(HYBRID_TAG)

.PHONY: train-acord-ce run-acord-rerank
train-acord-ce: $(ACORD_CE)/legalir-train.json ## ACORD: fine-tune the cross-encoder on train, pick lr/updates/seed on valid (skipped if present; resumes)

$(ACORD_CE)/legalir-train.json:
	$(MAKE) --no-print-directory $(foreach r,$(ACORD_CE_VALID),runs/acord/$(r).valid.trec)
	$(LEGALIR) train-ce collections/acord $(ACORD_CE) $(foreach r,$(ACORD_CE_VALID),--valid-run runs/acord/$(r).valid.trec) $(ACORD_CE_ARGS)

.PRECIOUS: runs/acord/%-ce.test.trec
runs/acord/%-ce.test.trec: runs/acord/%.test.trec $(ACORD_CE)/legalir-train.json
	$(LEGALIR) rerank $@ --run $< --topics collections/acord/topics/test.jsonl --collection collections/acord \
	  -k $(RERANK_K) --model $(ACORD_CE) --tag $*-ce $(RERANK_ARGS)

# judged-only scores of any ACORD test run (first stage or reranked)
results/acord/%.test.json: runs/acord/%.test.trec
	$(LEGALIR) report acord $< --qrels collections/acord/qrels/test.txt --results-dir results/acord > /dev/null

run-acord-rerank: $(foreach r,$(ACORD_RERANKED),results/acord/$(r).test.json results/acord/$(r)-ce.test.json) ## ACORD: fine-tuned cross-encoder over BM25 / MiniLM / hybrid (top RERANK_K), beside the paper's rows
	$(LEGALIR) report acord $^ $(foreach r,$(ACORD_RERANKED),--label "$(r)" --label "$(r) + fine-tuned CE (top $(RERANK_K))") \
	  --title "ACORD test, judged-only: first stage, then the cross-encoder fine-tuned on ACORD train ($(ACORD_CE))"

# ---- the demo: BM25 on the real ACORD test split, beside the paper's Table 3. The ACORD release ships
# inside legalir (legalir/resources/acord, CC BY 4.0): no download; a copy in $(DATA_DIR)/acord wins.
# Progress goes to stderr; stdout is the table that README.md shows (tests/test_demo.py compares them).
# each step is echoed on stderr before it runs (stdout stays the table), so it can be copied and changed
comma := ,
demo_step = @printf '+ %s\n' '$(subst ','\'',$(1))' >&2; $(1)
.PHONY: demo
demo: $(STAMP) ## set up, then BM25 on the real ACORD test split (release shipped inside legalir), beside the paper
	$(call demo_step,$(LEGALIR) convert acord --data-dir $(DATA_DIR) --quiet)
	$(call demo_step,$(LEGALIR) index collections/acord indexes/acord/bm25 --threads $(THREADS))
	$(call demo_step,$(LEGALIR) search indexes/acord/bm25 collections/acord/topics/test.jsonl runs/acord/bm25.test.trec \
	  -k $(RUN_DEPTH) $(acord_BM25) --threads $(THREADS))
	$(call demo_step,$(LEGALIR) report acord runs/acord/bm25.test.trec --qrels collections/acord/qrels/test.txt \
	  --label "$(acord_BM25_WORDS)" --title "ACORD test split (57 queries)$(comma) judged-only$(comma) in %")

# ---- documented figures: the blocks of README.md and docs/*.md between `<!-- figures: NAME VIEW -->` and
# `<!-- /figures -->` are rendered from docs/figures/NAME.json, which the benchmark that measured them writes
# (scripts/figures.py). This reruns those benchmarks afresh (the demo; the statute codes' cross-reference
# benchmark, MiniLM included, on the CPU without a GPU: minutes) and rewrites the blocks; tests/test_figures.py
# fails when a block differs from its file or a benchmark it can rerun from what the file holds.
STATUTES_DATA ?= $(DATA_DIR)/statutes
FIGURES_CODES ?= nc:81
FIGURES_WORK  ?= results/figures
.PHONY: docs-figures
docs-figures: $(STAMP) ## rerun the benchmarks behind the docs' generated figures, rewrite those blocks (STATUTES_DATA=../shared/data/statutes)
	@rm -rf $(FIGURES_WORK) && mkdir -p $(FIGURES_WORK)
	$(MAKE) -s --no-print-directory demo > $(FIGURES_WORK)/demo.out
	$(BIN)/python scripts/figures.py text demo --from $(FIGURES_WORK)/demo.out --command "make demo"
	set -e; for code in $(FIGURES_CODES); do st=$${code%:*} rel=$${code#*:}; \
	  PATH="$(abspath $(BIN)):$$PATH" HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 FIGURES=docs/figures/statutes-$$st$$rel.json \
	    scripts/bench_statutes.sh $(STATUTES_DATA) $$st $$rel $(FIGURES_WORK)/statutes; done
	$(BIN)/python scripts/figures.py write

clean-outputs: ## remove collections/, indexes/*/, runs/, results/ (keeps .venv)
	rm -rf collections runs results $(filter-out indexes/README.md,$(wildcard indexes/*))

# ---- downstream QA (legalir qa): answer accuracy under the paper's passage conditions, beside its
# Llama 3 8B rows (Tables 30/33). QA_BACKEND=local: LLM is a transformers model folder and the answer is
# the maximum-likelihood label; QA_BACKEND=api: LLM is a model name on an OpenAI-compatible server
# (LEGALIR_LLM_BASE_URL, LEGALIR_LLM_API_KEY). The default LLM, models/tiny-lm, is a RANDOM-WEIGHT 1-layer
# GPT-2 written by scripts/tiny_lm.py: it runs the pipeline end to end offline; its accuracies mean nothing.
#   make qa-barexam DATA_DIR=tests/fixtures      (the fixtures)    make qa-housing LLM=/models/llama-3-8b-instruct
# QA_EXPANSION=<expand output .jsonl> adds the expansion-as-pseudo-passage condition.
QA_BACKEND   ?= local
LLM          ?= models/tiny-lm
QA_TAG       ?= $(notdir $(LLM))
QA_K         ?= 5
QA_ARGS      ?=
QA_EXPANSION ?=
QA_CONDITIONS = none top1 topk gold $(if $(QA_EXPANSION),expansion)
qa_llm_dep = $(if $(filter local,$(QA_BACKEND)),$(if $(filter models/tiny-lm,$(LLM)),models/tiny-lm/config.json))
# $(1) dataset, $(2) results folder, $(3) run, $(4) collection, $(5) condition
qa_cmd = $(LEGALIR) qa $(1) $(2)/$(QA_TAG).$(5).jsonl --data-dir $(DATA_DIR) --condition $(5) \
  $(if $(filter top1 topk,$(5)),--run $(3) --collection $(4) -k $(QA_K))$(if $(filter gold,$(5)),--collection $(4))$(if $(filter expansion,$(5)),--expansion $(QA_EXPANSION)) \
  --backend $(QA_BACKEND) --llm $(LLM) $(QA_ARGS)

define qa_nl


endef
.PHONY: qa-barexam qa-housing
models/tiny-lm/config.json: | $(STAMP)
	$(BIN)/python scripts/tiny_lm.py models/tiny-lm

qa-barexam: runs/barexam/bm25.test.trec $$(qa_llm_dep) ## Bar Exam QA: QA accuracy (LLM=, QA_BACKEND=) without/with BM25 passages, gold; beside the paper's
	$(foreach c,$(QA_CONDITIONS),$(call qa_cmd,barexam_qa,results/qa/barexam,runs/barexam/bm25.test.trec,collections/barexam_qa,$(c))$(qa_nl))$(LEGALIR) qa-report barexam_qa $(foreach c,$(QA_CONDITIONS),results/qa/barexam/$(QA_TAG).$(c).json)

qa-housing: runs/housing/bm25.test.trec $$(qa_llm_dep) ## Housing Statute QA: QA accuracy (LLM=, QA_BACKEND=) without/with BM25 statutes, gold; beside the paper's
	$(foreach c,$(QA_CONDITIONS),$(call qa_cmd,housing_qa,results/qa/housing,runs/housing/bm25.test.trec,collections/housing_qa,$(c))$(qa_nl))$(LEGALIR) qa-report housing_qa $(foreach c,$(QA_CONDITIONS),results/qa/housing/$(QA_TAG).$(c).json)

# ---- reproducible expectations: legalir/resources/regressions/<dataset>.toml (exact commands, expected
# scores, tolerance); OK / off by / FAIL per number. REGRESS_ARGS=--all adds the slow tier (dense encoding).
REGRESS_ARGS ?=
.PHONY: regress-acord
regress-acord: | $(STAMP) ## ACORD: rerun the published pipelines (BM25 rows; --all: + MiniLM) and check every number
	$(LEGALIR) regress acord --data-dir $(DATA_DIR) $(REGRESS_ARGS)

# ---- statute retrieval trained on the codes' own cross-references (issue 40; docs/statutes.md, "Training on
# the codes' own cross-references"). The protocol cannot leak: the models train on the codes of LINKS_TRAIN only
# (their train topic sets, as written and masked; BM25 negatives from their own runs), select on those codes'
# valid topics, and are reported on the test topics of every code of LINKS_UNSEEN, which no training command
# names (tests/test_train_dense.py::test_make_links_train_touches_no_unseen_code runs them with the unseen codes' files unopenable
# and the training codes' test files corrupt). One target per step, each resumable (what exists is kept); seeds
# fixed (LINKS_SEED); everything is written under LINKS_OUT, never into the package:
#   LINKS_OUT/collections/<st><rel>/  LINKS_OUT/indexes/<st><rel>/{bm25,minilm,dense}  LINKS_OUT/emb/<st><rel>/...
#   LINKS_OUT/runs/<st><rel>/<system>.<set>.trec  LINKS_OUT/models/{dense,ce}  LINKS_OUT/table.{md,json}
#   make links-collections  convert every code (LINKS_DATA: the publisher's cic-code-XX folders or archives)
#   make links-bm25         BM25 indexes and runs (train/valid of the training codes; test of the unseen ones)
#   make links-train        train-dense and train-ce on the training codes (LINKS_DENSE_ARGS, LINKS_CE_ARGS)
#   make links-encode       encode the unseen codes with MiniLM and with the trained model (its document text)
#   make links-index        their FAISS indexes
#   make links-search       dense runs, the hybrid (RRF of BM25 and trained dense), the cross-encoder reranks
#   make links-eval         the table: scripts/links_table.py over the run files (legalir compare vs BM25)
#   make links-loso         leave-one-state-out on the training codes: a second table
# LINKS_DEVICE: cpu, cuda or cuda:N [default: cuda when torch sees one]. On 2 CPU cores the defaults take days;
# scripts/device/links_gpu.sh runs them on one GPU.
LINKS_DATA    ?= $(STATUTES_DATA)
LINKS_OUT     ?= results/links
LINKS_TRAIN   ?= ga:86 nc:81 tn:76 ky:87 co:80
LINKS_UNSEEN  ?= ak:82 ar:78 id:70 ms:78 nd:81 ri:74 va:88 vt:85 wy:84
LINKS_DEVICE  ?=
LINKS_SEED    ?= 42
LINKS_BASE    ?= minilm
#: the general-purpose encoder of the baseline rows (a model folder where the bundled one is not installed)
LINKS_MINILM  ?= minilm
LINKS_DENSE_ARGS ?= --steps 3000 --batch-size 64 --lr 2e-5 --eval-every 500 --valid-topics 200 --valid-depth 20 \
  --hard-negatives 1 --negatives-depth 20
LINKS_CE_ARGS ?= --lr 5e-4,1e-3 --checkpoints 250,500,1000 --negatives-depth 20 --valid-depth 50 --batch-size 64
LINKS_RERANK_K ?= 100
LINKS_RERANK  ?= bm25-on hybrid
#: the BM25 run the hybrid fuses with the trained dense run (citations on: an as-written citation still finds its
#: section; the masked topics have none)
LINKS_HYBRID_FROM ?= bm25-on
#: how the hybrid fuses them: tuned (default: `legalir tune-fusion` on the training codes' valid and valid.masked
#: topics, MRR; `make links-fusion`, which encodes the training codes too), or `legalir fuse` options, e.g.
#: "--method rrf" (equal-weight RRF costs the as-written topics BM25's citation hits: docs/statutes.md)
LINKS_FUSE_ARGS ?= tuned
links_fuse = $(if $(filter tuned,$(LINKS_FUSE_ARGS)),--params $(LO)/models/fusion.json,$(LINKS_FUSE_ARGS))
links_fuse_dep = $(if $(filter tuned,$(LINKS_FUSE_ARGS)),$(LO)/models/fusion.json)
LINKS_DEPTH   ?= 100
#: 1: the BM25 runs are given (made elsewhere, e.g. carried to a GPU machine without Java): no BM25 index is
#: made or needed for them
LINKS_RUNS_GIVEN ?=
#: the text the trained models read for a section: its number, heading and heading path, then its text
LINKS_DOC_TEXT ?= {citation} {title}\n{heading_path}\n{contents}

links_name = $(subst :,,$(1))
links_st   = $(word 1,$(subst :, ,$(1)))
links_rel  = $(word 2,$(subst :, ,$(1)))
LINKS_TRAIN_N  := $(foreach c,$(LINKS_TRAIN),$(call links_name,$(c)))
LINKS_UNSEEN_N := $(foreach c,$(LINKS_UNSEEN),$(call links_name,$(c)))
LINKS_OVERLAP  := $(filter $(LINKS_TRAIN_N),$(LINKS_UNSEEN_N))
LINKS_ENV = $(if $(filter cpu,$(LINKS_DEVICE)),CUDA_VISIBLE_DEVICES= ,$(if $(filter cuda:%,$(LINKS_DEVICE)),CUDA_VISIBLE_DEVICES=$(patsubst cuda:%,%,$(LINKS_DEVICE)) ))
LINKS_L  = $(LINKS_ENV)$(LEGALIR)
LO      := $(LINKS_OUT)
LC       = $(LO)/collections
LINKS_TRAIN_SETS  := train train.masked valid valid.masked
LINKS_TEST_SETS   := test test.masked
#: the table's rows; the first is the baseline of the significance tests
LINKS_SYSTEMS     := bm25-on bm25-off minilm dense hybrid $(foreach f,$(LINKS_RERANK),$(f)-ce)

ifneq ($(LINKS_OVERLAP),)
$(error LINKS_UNSEEN names a training code ($(LINKS_OVERLAP)): the unseen codes must be outside LINKS_TRAIN)
endif

.PHONY: links links-collections links-bm25 links-train links-dense links-ce links-fusion links-encode links-index links-search links-eval links-loso
# every file of the chain is kept (make would remove the intermediate ones): each rule's target pattern
.PRECIOUS: $(LO)/indexes/%/bm25/legalir-index.json $(LO)/indexes/%/legalir-dense.json $(LO)/emb/%/minilm/manifest.json \
  $(LO)/emb/%/dense/manifest.json $(LO)/train/bm25-off.%.trec

# one code ($(1): st:rel): its collection and BM25 index
define LINKS_CODE
$(LC)/$(call links_name,$(1))/manifest.json:
	$(LEGALIR) convert statutes --data-dir $(LINKS_DATA) --option state=$(call links_st,$(1)) \
	  --option release=$(call links_rel,$(1)) --out $(LC)/$(call links_name,$(1)) --quiet
endef
$(foreach c,$(LINKS_TRAIN) $(LINKS_UNSEEN),$(eval $(call LINKS_CODE,$(c))))

$(LO)/indexes/%/bm25/legalir-index.json: | $(LC)/%/manifest.json
	$(LEGALIR) index $(LC)/$* $(LO)/indexes/$*/bm25 --threads $(THREADS)

# BM25 runs of topic set $(1), citations $(2)
define LINKS_BM25_RUN
.PRECIOUS: $(LO)/runs/%/bm25-$(2).$(1).trec
$(LO)/runs/%/bm25-$(2).$(1).trec: $(if $(LINKS_RUNS_GIVEN),,| $(LO)/indexes/%/bm25/legalir-index.json)
	@mkdir -p $$(@D)
	$(LEGALIR) search $(LO)/indexes/$$*/bm25 $(LC)/$$*/topics/$(1).jsonl $$@ -k $(LINKS_DEPTH) --citations $(2) \
	  --threads $(THREADS)
endef
$(foreach s,$(LINKS_TRAIN_SETS) $(LINKS_TEST_SETS),$(foreach c,off on,$(eval $(call LINKS_BM25_RUN,$(s),$(c)))))

links-collections: $(foreach n,$(LINKS_TRAIN_N) $(LINKS_UNSEEN_N),$(LC)/$(n)/manifest.json) ## issue 40: convert the training and the unseen codes (LINKS_DATA, LINKS_OUT)

links-bm25: $(foreach n,$(LINKS_TRAIN_N),$(foreach s,$(LINKS_TRAIN_SETS),$(LO)/runs/$(n)/bm25-off.$(s).trec) \
    $(LO)/runs/$(n)/$(LINKS_HYBRID_FROM).valid.trec $(LO)/runs/$(n)/$(LINKS_HYBRID_FROM).valid.masked.trec) \
  $(foreach n,$(LINKS_UNSEEN_N),$(foreach s,$(LINKS_TEST_SETS),$(LO)/runs/$(n)/bm25-off.$(s).trec $(LO)/runs/$(n)/bm25-on.$(s).trec)) ## issue 40: BM25 indexes and runs (train/valid of the training codes, test of the unseen)

# ---- training: the training codes only. The BM25 runs are order-only inputs (made by links-bm25; a GPU machine
# without Java takes them as they are). The cross-encoder's validation and negatives runs are the training codes'
# runs concatenated (their topic ids are distinct: ga_..., nc_...).
# $(1): the model folder, $(2): the codes trained on (names), $(3): extra train-dense arguments
links_dense_cmd = $(LINKS_L) train-dense $(foreach n,$(2),--from-links $(LC)/$(n) --runs $(LC)/$(n)=$(LO)/runs/$(n)) \
  --out $(1) --base-model $(LINKS_BASE) --seed $(LINKS_SEED) --doc-text '$(LINKS_DOC_TEXT)' $(LINKS_DENSE_ARGS) $(3)
links_train_runs = $(foreach n,$(1),$(foreach s,$(LINKS_TRAIN_SETS),$(LO)/runs/$(n)/bm25-off.$(s).trec))

$(LO)/models/dense/model_card.json: | $(call links_train_runs,$(LINKS_TRAIN_N))
	$(call links_dense_cmd,$(LO)/models/dense,$(LINKS_TRAIN_N))

$(LO)/train/bm25-off.%.trec: | $(call links_train_runs,$(LINKS_TRAIN_N))
	@mkdir -p $(@D)
	cat $(foreach n,$(LINKS_TRAIN_N),$(LO)/runs/$(n)/bm25-off.$*.trec) > $@.tmp && mv $@.tmp $@

$(LO)/models/ce/legalir-train.json: | $(foreach s,$(LINKS_TRAIN_SETS),$(LO)/train/bm25-off.$(s).trec)
	$(LINKS_L) train-ce $(LC)/$(firstword $(LINKS_TRAIN_N)) $(LO)/models/ce \
	  $(foreach n,$(wordlist 2,99,$(LINKS_TRAIN_N)),--also $(LC)/$(n)) --base-model $(LINKS_BASE) \
	  --train-topics train --train-topics train.masked --valid-topics valid.masked \
	  --valid-run $(LO)/train/bm25-off.valid.masked.trec --negatives-run $(LO)/train/bm25-off.train.trec \
	  --negatives-run $(LO)/train/bm25-off.train.masked.trec --every-candidate --measure recip_rank \
	  --seed $(LINKS_SEED) --doc-text '$(LINKS_DOC_TEXT)' $(LINKS_CE_ARGS)

# the hybrid's fusion, tuned on the training codes' validation topics (both wordings) with the trained model's runs
$(LO)/train/fusion/qrels/valid.txt: | $(foreach n,$(LINKS_TRAIN_N),$(LC)/$(n)/manifest.json)
	@mkdir -p $(@D)
	cat $(foreach n,$(LINKS_TRAIN_N),$(LC)/$(n)/qrels/valid.txt) > $@.tmp && mv $@.tmp $@
$(LO)/train/%.valid.trec $(LO)/train/%.valid.masked.trec: | $(foreach n,$(LINKS_TRAIN_N),$(LO)/runs/$(n)/%.valid.trec $(LO)/runs/$(n)/%.valid.masked.trec)
	@mkdir -p $(@D)
	cat $(foreach n,$(LINKS_TRAIN_N),$(LO)/runs/$(n)/$*.valid.trec) > $(LO)/train/$*.valid.trec.tmp
	cat $(foreach n,$(LINKS_TRAIN_N),$(LO)/runs/$(n)/$*.valid.masked.trec) > $(LO)/train/$*.valid.masked.trec.tmp
	mv $(LO)/train/$*.valid.trec.tmp $(LO)/train/$*.valid.trec && mv $(LO)/train/$*.valid.masked.trec.tmp $(LO)/train/$*.valid.masked.trec
$(LO)/models/fusion.json: | $(LO)/train/fusion/qrels/valid.txt $(LO)/train/$(LINKS_HYBRID_FROM).valid.trec $(LO)/train/dense.valid.trec
	$(LEGALIR) tune-fusion statutes --collection $(LO)/train/fusion --topics valid --topics valid.masked \
	  --run '$(LO)/train/$(LINKS_HYBRID_FROM).{set}.trec' --run '$(LO)/train/dense.{set}.trec' --measure recip_rank -o $@

links-fusion: $(LO)/models/fusion.json ## issue 40: the hybrid's fusion tuned on the training codes' valid topics (encodes them with the trained model)
links-dense: $(LO)/models/dense/model_card.json
links-ce: $(LO)/models/ce/legalir-train.json
links-train: links-dense links-ce ## issue 40: train the dense retriever and the cross-encoder on the training codes' links (LINKS_DEVICE)

# ---- the unseen codes: encode, index, search
$(LO)/emb/%/minilm/manifest.json: | $(LC)/%/manifest.json
	$(LINKS_L) encode $(LC)/$* $(LO)/emb/$*/minilm --encoder $(LINKS_MINILM) --quiet
$(LO)/emb/%/dense/manifest.json: | $(LC)/%/manifest.json $(LO)/models/dense/model_card.json
	$(LINKS_L) encode $(LC)/$* $(LO)/emb/$*/dense --encoder $(LO)/models/dense --quiet
$(LO)/indexes/%/legalir-dense.json: | $(LO)/emb/%/manifest.json
	$(LINKS_L) index-dense $(LO)/emb/$* $(LO)/indexes/$*

links-encode: $(foreach n,$(LINKS_UNSEEN_N),$(LO)/emb/$(n)/minilm/manifest.json $(LO)/emb/$(n)/dense/manifest.json) ## issue 40: encode the unseen codes (MiniLM; the trained model with its document text)
links-index: $(foreach n,$(LINKS_UNSEEN_N),$(LO)/indexes/$(n)/minilm/legalir-dense.json $(LO)/indexes/$(n)/dense/legalir-dense.json) ## issue 40: FAISS indexes of the unseen codes' embeddings

# dense runs ($(1): minilm or dense), the hybrid and the reranks, of topic set $(2)
define LINKS_DENSE_RUN
.PRECIOUS: $(LO)/runs/%/$(1).$(2).trec
$(LO)/runs/%/$(1).$(2).trec: | $(LO)/indexes/%/$(1)/legalir-dense.json
	@mkdir -p $$(@D)
	$(LINKS_L) search-dense $(LO)/indexes/$$*/$(1) $(LC)/$$*/topics/$(2).jsonl $$@ -k $(LINKS_DEPTH)
endef
define LINKS_LATE_RUNS
.PRECIOUS: $(LO)/runs/%/hybrid.$(1).trec $(LO)/runs/%-ce.$(1).trec
$(LO)/runs/%/hybrid.$(1).trec: | $(LO)/runs/%/$(LINKS_HYBRID_FROM).$(1).trec $(LO)/runs/%/dense.$(1).trec $(links_fuse_dep)
	$(LEGALIR) fuse $(LO)/runs/$$*/$(LINKS_HYBRID_FROM).$(1).trec $(LO)/runs/$$*/dense.$(1).trec -o $$@ $(links_fuse) \
	  -k $(LINKS_DEPTH) --tag hybrid
$(LO)/runs/%-ce.$(1).trec: | $(LO)/runs/%.$(1).trec $(LO)/models/ce/legalir-train.json
	$(LINKS_L) rerank $$@ --run $(LO)/runs/$$*.$(1).trec --topics $(LC)/$$(word 1,$$(subst /, ,$$*))/topics/$(1).jsonl \
	  --collection $(LC)/$$(word 1,$$(subst /, ,$$*)) -k $(LINKS_RERANK_K) --model $(LO)/models/ce --tag ce
endef
$(foreach s,$(LINKS_TEST_SETS),$(foreach m,minilm dense,$(eval $(call LINKS_DENSE_RUN,$(m),$(s))))$(eval $(call LINKS_LATE_RUNS,$(s))))
$(foreach s,valid valid.masked,$(eval $(call LINKS_DENSE_RUN,dense,$(s))))   # the training codes' (links-fusion)

links-search: $(foreach n,$(LINKS_UNSEEN_N),$(foreach s,$(LINKS_TEST_SETS),$(foreach r,$(LINKS_SYSTEMS),$(LO)/runs/$(n)/$(r).$(s).trec))) ## issue 40: the unseen codes' runs: MiniLM, trained dense, hybrid, cross-encoder reranks

links-eval: ## issue 40: the table over the unseen codes' run files (hit@1, MRR@10, R@100, paired t-test vs BM25), LINKS_OUT/table.{md,json}
	$(BIN)/python scripts/links_table.py $(LO) --codes "$(LINKS_UNSEEN_N)" --systems "$(LINKS_SYSTEMS)" \
	  --trained "$(LINKS_TRAIN_N)" --out $(LO)/table

links: links-collections links-bm25 links-train links-fusion links-encode links-index links-search links-eval ## issue 40: every step above, in order

# ---- anchor text (issue 40; docs/statutes.md, "Anchor text"): each unseen code's sections expanded with the words
# around the links to them from the code's own train paragraphs (`legalir anchors`; its valid and test topics never
# give an anchor), a BM25 index of that, its runs, and its hybrid with the trained dense retriever. Nothing trained.
#   make links-anchors      LINKS_OUT/anchors/<code>/ (collection), indexes/<code>/anchors, runs/<code>/anchors-{on,hybrid}
# then `make links-eval LINKS_SYSTEMS="bm25-on anchors-on anchors-hybrid ..."` puts them in the table.
LINKS_ANCHORS_ARGS ?= --window 10 --shingle 8 --max-per-document 100
.PHONY: links-anchors
.PRECIOUS: $(LO)/anchors/%/manifest.json $(LO)/indexes/%/anchors/legalir-index.json
$(LO)/anchors/%/manifest.json: | $(LC)/%/manifest.json
	$(LEGALIR) anchors $(LC)/$* $(LO)/anchors/$* $(LINKS_ANCHORS_ARGS) --quiet
$(LO)/indexes/%/anchors/legalir-index.json: | $(LO)/anchors/%/manifest.json
	$(LEGALIR) index $(LO)/anchors/$* $(LO)/indexes/$*/anchors --threads $(THREADS)
define LINKS_ANCHORS_RUN
.PRECIOUS: $(LO)/runs/%/anchors-on.$(1).trec $(LO)/runs/%/anchors-hybrid.$(1).trec
$(LO)/runs/%/anchors-on.$(1).trec: | $(LO)/indexes/%/anchors/legalir-index.json
	@mkdir -p $$(@D)
	$(LEGALIR) search $(LO)/indexes/$$*/anchors $(LC)/$$*/topics/$(1).jsonl $$@ -k $(LINKS_DEPTH) --citations on \
	  --threads $(THREADS)
$(LO)/runs/%/anchors-hybrid.$(1).trec: | $(LO)/runs/%/anchors-on.$(1).trec $(LO)/runs/%/dense.$(1).trec $(links_fuse_dep)
	$(LEGALIR) fuse $(LO)/runs/$$*/anchors-on.$(1).trec $(LO)/runs/$$*/dense.$(1).trec -o $$@ $(links_fuse) \
	  -k $(LINKS_DEPTH) --tag anchors-hybrid
endef
$(foreach s,$(LINKS_TEST_SETS),$(eval $(call LINKS_ANCHORS_RUN,$(s))))

links-anchors: $(foreach n,$(LINKS_UNSEEN_N),$(foreach s,$(LINKS_TEST_SETS),$(LO)/runs/$(n)/anchors-on.$(s).trec)) ## issue 40: the unseen codes' sections expanded with their anchor text (the code's train paragraphs), BM25 runs

# ---- leave-one-state-out on the training codes: for each training code H, a dense retriever trained on the
# others (the same settings), evaluated on H's test topics: LINKS_OUT/loso/H/... Its hybrid is not the tuned
# fusion (tuned on H's valid topics too): LINKS_LOSO_FUSE_ARGS.
LINKS_LOSO_FUSE_ARGS ?= --method rrf
define LINKS_LOSO
.PRECIOUS: $(LO)/loso/runs/$(1)/dense.%.trec $(LO)/loso/runs/$(1)/%.trec $(LO)/loso/runs/$(1)/hybrid.%.trec
$(LO)/loso/$(1)/model/model_card.json: | $(call links_train_runs,$(filter-out $(1),$(LINKS_TRAIN_N)))
	$(call links_dense_cmd,$(LO)/loso/$(1)/model,$(filter-out $(1),$(LINKS_TRAIN_N)))
$(LO)/loso/$(1)/emb/manifest.json: | $(LO)/loso/$(1)/model/model_card.json $(LC)/$(1)/manifest.json
	$(LINKS_L) encode $(LC)/$(1) $(LO)/loso/$(1)/emb --encoder $(LO)/loso/$(1)/model --quiet
$(LO)/loso/$(1)/index/legalir-dense.json: | $(LO)/loso/$(1)/emb/manifest.json
	$(LINKS_L) index-dense $(LO)/loso/$(1)/emb $(LO)/loso/$(1)/index
$(LO)/loso/runs/$(1)/dense.%.trec: | $(LO)/loso/$(1)/index/legalir-dense.json
	@mkdir -p $$(@D)
	$(LINKS_L) search-dense $(LO)/loso/$(1)/index $(LC)/$(1)/topics/$$*.jsonl $$@ -k $(LINKS_DEPTH)
$(LO)/loso/runs/$(1)/%.trec: | $(LO)/runs/$(1)/%.trec
	@mkdir -p $$(@D)
	cp $(LO)/runs/$(1)/$$*.trec $$@
$(LO)/loso/runs/$(1)/hybrid.%.trec: | $(LO)/loso/runs/$(1)/$(LINKS_HYBRID_FROM).%.trec $(LO)/loso/runs/$(1)/dense.%.trec
	$(LEGALIR) fuse $(LO)/loso/runs/$(1)/$(LINKS_HYBRID_FROM).$$*.trec $(LO)/loso/runs/$(1)/dense.$$*.trec -o $$@ $(LINKS_LOSO_FUSE_ARGS) \
	  -k $(LINKS_DEPTH) --tag hybrid
endef
$(foreach n,$(LINKS_TRAIN_N),$(eval $(call LINKS_LOSO,$(n))))

links-loso: $(foreach n,$(LINKS_TRAIN_N),$(foreach s,$(LINKS_TEST_SETS),$(foreach r,bm25-on bm25-off minilm dense hybrid,$(LO)/loso/runs/$(n)/$(r).$(s).trec))) ## issue 40: leave-one-state-out on the training codes (a dense model per held-out code), LINKS_OUT/loso/table.{md,json}
	$(BIN)/python scripts/links_table.py $(LO)/loso --codes "$(LINKS_TRAIN_N)" --systems "bm25-on bm25-off minilm dense hybrid" \
	  --collections $(LC) --leave-one-out --out $(LO)/loso/table
