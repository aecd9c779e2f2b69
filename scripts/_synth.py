"""Synthetic legal-looking text for the scale generators: Zipf-distributed words, reproducible from a seed.

Word frequencies follow Zipf's law over a 60,000-word vocabulary whose head
is common legal English, so Lucene sees a realistic term distribution
(posting-list lengths, dictionary size). Lengths are log-normal.
"""
from __future__ import annotations

import numpy as np

HEAD = ("the of and to a in or shall be any by for is that as this section on with person may not an "
        "court under such which notice if tenant landlord premises rent lease state law provided other "
        "property shall have than at from no who agreement within days written party action time "
        "county act dwelling unit pursuant chapter subsection paragraph owner deposit security "
        "damages payment charge fee term period after before public code rental residential").split()


def vocabulary(size: int = 60_000, seed: int = 0) -> list[str]:
    rng = np.random.default_rng(seed)
    syll = ["ab", "ac", "ad", "al", "am", "an", "ar", "as", "at", "be", "ca", "ce", "co", "de", "di", "do",
            "el", "em", "en", "er", "es", "fi", "ge", "in", "ir", "is", "la", "le", "li", "lo", "ma", "me",
            "mi", "mo", "na", "ne", "no", "ob", "on", "or", "pa", "pe", "po", "pre", "pro", "ra", "re", "ri",
            "ro", "sa", "se", "si", "su", "ta", "te", "ti", "to", "tu", "ul", "un", "ur", "us", "va", "ve"]
    words, seen = list(HEAD), set(HEAD)
    while len(words) < size:
        n = int(rng.integers(2, 5))
        w = "".join(syll[i] for i in rng.integers(0, len(syll), n))
        if w not in seen:
            seen.add(w)
            words.append(w)
    return words


class TextSource:
    """Draws texts of log-normal length (in words) from a Zipf(1.07) distribution over the vocabulary."""

    def __init__(self, seed: int, mean_words: float, sigma: float = 0.9, vocab_size: int = 60_000):
        self.rng = np.random.default_rng(seed)
        self.vocab = vocabulary(vocab_size)
        ranks = np.arange(1, len(self.vocab) + 1)
        p = 1.0 / ranks ** 1.07
        self.cdf = np.cumsum(p / p.sum())
        self.sigma = sigma
        self.mu = np.log(mean_words) - sigma ** 2 / 2  # mean of the log-normal = mean_words

    def lengths(self, n: int) -> np.ndarray:
        return np.maximum(3, self.rng.lognormal(self.mu, self.sigma, n).astype(np.int64))

    def texts(self, n: int) -> list[str]:
        lens = self.lengths(n)
        ids = np.searchsorted(self.cdf, self.rng.random(int(lens.sum())))
        ids = np.minimum(ids, len(self.vocab) - 1).tolist()
        vocab, out, pos = self.vocab, [], 0
        for k in lens.tolist():
            out.append(" ".join([vocab[i] for i in ids[pos:pos + k]]))
            pos += k
        return out

    def words(self, k: int) -> str:
        ids = np.minimum(np.searchsorted(self.cdf, self.rng.random(k)), len(self.vocab) - 1)
        return " ".join(self.vocab[i] for i in ids.tolist())
