"""`legalir serve`: a JSON search API and a web page over built indexes, collections and runs.

* :mod:`legalir.serve.config`: what to expose (``--index NAME=DIR`` ... or a TOML/JSON file);
* :mod:`legalir.serve.engine`: the work behind each endpoint, on the library's own retrievers
  (:mod:`legalir.search`), fusion and evaluator; no HTTP in it;
* :mod:`legalir.serve.app`: the FastAPI application (a thin layer) and :func:`~legalir.serve.app.run`;
* ``static/``: the page (plain HTML, CSS and JavaScript, no build step).
"""
