"""`legalir regress`: the expectations file, verdicts, and ACORD's BM25 rows rerun on the real release (the CI
tier; the MiniLM rows are the slow tier, `legalir regress acord --all`)."""
from __future__ import annotations

import shutil

from click.testing import CliRunner

from legalir.cli import main
from legalir.scoring import regress


def test_expectations_file_and_verdicts(tmp_path):
    spec = regress.load("acord")
    tiers = {p.name: p.tier for p in spec.pipelines}
    assert sum(t == "ci" for t in tiers.values()) == 3 and any(t == "slow" and "MiniLM" in n for n, t in tiers.items())
    assert all(p.expected for p in spec.pipelines)
    assert regress.verdict(0.5003, 0.5, 0.0005, 0.01) == "OK"
    assert regress.verdict(0.505, 0.5, 0.0005, 0.01) == "off by +0.0050"
    assert regress.verdict(0.45, 0.5, 0.0005, 0.01) == "FAIL (-0.0500)"
    assert regress.verdict(None, 0.5, 0.0005, 0.01) == "FAIL (missing)"
    bad = tmp_path / "x.toml"
    bad.write_text('[[pipelines]]\nname = "a"\n')
    r = CliRunner().invoke(main, ["regress", str(bad)])
    assert r.exit_code == 2 and "missing run, qrels, expected" in r.output


def test_regress_acord_ci_tier_passes(acord_dir, acord_built, tmp_path):
    """The CI tier over a root holding the ACORD collection and index the test run built once (conftest.acord_built;
    copies: regress writes beside them): their steps are skipped, each pipeline's search runs here."""
    for part in ("collections", "indexes"):
        shutil.copytree(acord_built.root / part, tmp_path / part, symlinks=True)
    r = CliRunner().invoke(main, ["regress", "acord", "--root", str(tmp_path), "--data-dir", str(acord_dir.parent)],
                           catch_exceptions=False)
    assert r.exit_code == 0, r.output
    ran = [x for x in r.stderr.splitlines() if x.startswith("$ legalir ")]
    assert len(ran) == 3 and all(x.startswith("$ legalir search indexes/acord/bm25 ") for x in ran), ran
    for name in ("test", "test.medium", "test.long"):  # what the test run's own searches wrote, to the byte
        mine = tmp_path / "runs" / "acord" / acord_built.runs[name].name
        assert mine.read_text() == acord_built.runs[name].read_text(), name
    lines = [x for x in r.stdout.splitlines() if x.startswith("  ")]
    assert len(lines) == 24 and all("[OK]" in x for x in lines)
    assert "acord: all OK (24 of 24 numbers OK)" in r.stdout
    assert "slow tier not run: MiniLM" in r.stderr
    # a wrong expectation is a FAIL and exit status 1 (outputs reused: nothing is rebuilt)
    spec = (regress.REGRESSIONS_DIR / "acord.toml").read_text().replace("ndcg_cut_10 = 0.501958", "ndcg_cut_10 = 0.6")
    (tmp_path / "acord-bad.toml").write_text(spec)
    r = CliRunner().invoke(main, ["regress", str(tmp_path / "acord-bad.toml"), "--root", str(tmp_path),
                                  "--data-dir", str(acord_dir.parent)], catch_exceptions=False)
    assert r.exit_code == 1 and "[FAIL (-0.0980)]" in r.stdout and "$ legalir" not in r.stderr
