"""The legal-structure layer: citations of the codes and reporters (:mod:`~legalir.legal.citations`)
and metadata filters over jurisdictions and fields (:mod:`~legalir.legal.filters`)."""
