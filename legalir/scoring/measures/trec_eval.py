"""trec_eval 9.0.x's families that pytrec_eval (trec_eval's own C code) computes: declarations only.

Their values come from :func:`legalir.scoring.pytrec.compute`; the evaluator summarises them as
trec_eval does (mean, sum, geometric mean, ``-c``) because pytrec_eval returns per-topic values only.
"""
from __future__ import annotations

from legalir.scoring.measures.base import DEFAULT_CUTOFFS, Family, gain_map, numbers

FAMILIES = (
    Family("runid", "trec_eval", "runid", "str", per_topic=False, doc="run tag (last line of the run file)"),
    Family("num_q", "trec_eval", "num_q", "int", per_topic=False, doc="number of topics averaged over"),
    Family("num_ret", "trec_eval", "sum", "int", reset=0, doc="documents retrieved"),
    Family("num_rel", "trec_eval", "num_rel", "int", doc="relevant documents judged"),
    Family("num_rel_ret", "trec_eval", "sum", "int", doc="relevant documents retrieved"),
    Family("map", "trec_eval", doc="mean average precision"),
    Family("gm_map", "trec_eval", "gm", per_topic=False, doc="geometric mean of average precision"),
    Family("Rprec", "trec_eval", doc="precision after R documents (R = number relevant)"),
    Family("bpref", "trec_eval", doc="binary preference"),
    Family("recip_rank", "trec_eval", doc="reciprocal rank of the first relevant document (whole ranking)"),
    Family("P", "trec_eval", params="int", defaults=DEFAULT_CUTOFFS, doc="precision at k"),
    Family("recall", "trec_eval", params="int", defaults=DEFAULT_CUTOFFS, doc="recall at k"),
    Family("infAP", "trec_eval", doc="inferred AP"),
    Family("gm_bpref", "trec_eval", "gm", per_topic=False, doc="geometric mean of bpref"),
    Family("Rprec_mult", "trec_eval", params="float",
           defaults=(0.2, 0.4, 0.6, 0.8, 1.0, 1.2, 1.4, 1.6, 1.8, 2.0), doc="precision at multiples of R"),
    Family("binG", "trec_eval", doc="binary G"),
    Family("G", "trec_eval", params="raw", check=gain_map, doc="gain (gain map: G.1=3,2=9)"),
    Family("ndcg", "trec_eval", params="raw", check=gain_map,
           doc="nDCG over the whole ranking (gain = relevance; ndcg.1=3,2=9)"),
    Family("ndcg_rel", "trec_eval", params="raw", check=gain_map,
           doc="nDCG averaged over relevant documents (gain map)"),
    Family("Rndcg", "trec_eval", params="raw", check=gain_map, doc="nDCG at R (gain map)"),
    Family("ndcg_cut", "trec_eval", params="int", defaults=DEFAULT_CUTOFFS, doc="nDCG at k"),
    Family("map_cut", "trec_eval", params="int", defaults=DEFAULT_CUTOFFS, doc="average precision at k"),
    Family("relative_P", "trec_eval", params="int", defaults=DEFAULT_CUTOFFS,
           doc="precision at k relative to the best possible"),
    Family("success", "trec_eval", params="int", defaults=(1, 5, 10),
           doc="1 if a relevant document is in the top k (recall upper bound)"),
    Family("set_P", "trec_eval", doc="precision of the retrieved set"),
    Family("set_relative_P", "trec_eval", doc="relative precision of the retrieved set"),
    Family("set_recall", "trec_eval", doc="recall of the retrieved set"),
    Family("set_map", "trec_eval", doc="set precision x set recall"),
    Family("set_F", "trec_eval", params="raw", check=numbers(1), doc="F of the retrieved set (set_F.0.5: beta)"),
    Family("num_nonrel_judged_ret", "trec_eval", "sum", "int", doc="judged non-relevant documents retrieved"),
    Family("yaap", "trec_eval", doc="yet another average precision (Robertson)"),
)
