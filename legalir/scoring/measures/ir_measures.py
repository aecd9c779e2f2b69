"""ir_measures' families whose values its pytrec_eval provider computes: declarations only.

Each declares the parameters ir_measures accepts for it (``rel``, ``judged_only``), whether it takes a
cut-off, and the pytrec_eval family that computes it without (``plain``) and with (``cut``) one.
"""
from __future__ import annotations

from legalir.scoring.measures.base import IrFamily, IrParam
from legalir.trec import MAX_RELEVANCE

REL = IrParam(1, lambda v: type(v) is int and 1 <= v <= MAX_RELEVANCE,
              f"an integer from 1 to {MAX_RELEVANCE} (the grades legalir reads; as for -l)")
JUDGED_ONLY = IrParam(False, lambda v: type(v) is bool, "True or False")
RJ = {"rel": REL, "judged_only": JUDGED_ONLY}

IR_FAMILIES = (
    IrFamily("AP", RJ, "optional", plain="map", cut="map_cut"),
    IrFamily("P", RJ, "required", cut="P"),
    IrFamily("R", RJ, "required", cut="recall"),
    IrFamily("nDCG", {"judged_only": JUDGED_ONLY}, "optional", plain="ndcg", cut="ndcg_cut"),
    IrFamily("Success", RJ, "required", cut="success"),
    IrFamily("Bpref", {"rel": REL}, "no", plain="bpref"),
    IrFamily("infAP", {"rel": REL}, "no", plain="infAP"),
    IrFamily("SetP", RJ, "no", plain="set_P"),
    IrFamily("SetR", {"rel": REL}, "no", plain="set_recall"),
    IrFamily("SetF", RJ, "no", plain="set_F"),
    IrFamily("SetAP", RJ, "no", plain="set_map"),
    IrFamily("IPrec", RJ, "required", cut="iprec_at_recall", float_cutoff=True),
    IrFamily("Rprec", RJ, "no", plain="Rprec"),
)
