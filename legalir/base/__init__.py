"""The foundation layer: errors aside (``legalir.errors``), what every layer above uses: the checks of
arguments (:mod:`~legalir.base.checks`), logging and progress bars (:mod:`~legalir.base.log`), the one
JVM start (:mod:`~legalir.base.jvm`), thread counts (:mod:`~legalir.base.numeric`), the bundled
models (:mod:`~legalir.base.models`), the collector settings of legalir's own processes
(:mod:`~legalir.base.collector`) and the atomic writer (:mod:`~legalir.base.atomic`)."""
