"""Options shared by several commands, declared once."""
from __future__ import annotations

import functools

import click

#: run depth options: at least one document per topic
DEPTH = click.IntRange(min=1)


def unescape(text):
    """Command-line formats may write a newline as \\n."""
    return None if text is None else text.replace("\\n", "\n")


def float_list(ctx, param, value):
    try:
        return [float(x) for v in value for x in str(v).split(",") if x.strip()]
    except ValueError:
        raise click.BadParameter(f"expected numbers, got {value!r}") from None


def int_list(ctx, param, value):
    try:
        return [int(x) for x in str(value).split(",") if x.strip()]
    except ValueError:
        raise click.BadParameter(f"expected comma-separated integers, got {value!r}") from None


def key_values(ctx, param, value):
    """``KEY=VALUE`` options as a dict (a key given twice: the last wins)."""
    out = {}
    for o in value:
        if "=" not in o:
            raise click.BadParameter(f"expected KEY=VALUE, got {o!r}")
        key, v = o.split("=", 1)
        out[key.strip()] = v
    return out


def tag(default: str | None, what: str = "Run tag (last column)"):
    def check(ctx, param, value):
        if value is not None and (not value or any(c.isspace() for c in value)):
            raise click.BadParameter(f"a run tag is one word without spaces, got {value!r}")
        return value

    return click.option("--tag", default=default, show_default=default is not None, callback=check,
                        help=f"{what}; one word.")


def _apply(fn, opts):
    for o in reversed(opts):
        fn = o(fn)
    return fn


def encoder_options(fn):
    """How a dense encoder turns text into vectors (encode, search-dense)."""
    return _apply(fn, [
        click.option("--pooling", type=click.Choice(["mean", "cls", "last"]), default=None,
                     help="Pooling of token vectors [default: the model's own, else its family's preset, else mean]."),
        click.option("--max-length", type=click.IntRange(min=1), default=None,
                     help="Maximum tokens per text [default: model/preset]."),
        click.option("--query-format", default=None,
                     help="Query text format with {text} and optionally {instruction}, e.g. 'query: {text}' "
                          "[default: the family's preset]."),
        click.option("--doc-format", default=None, help="Document text format with {text}, e.g. 'passage: {text}'."),
        click.option("--instruction", default=None,
                     help="Task instruction for {instruction} in queries (search-dense: overrides the topics' "
                          "'instruction' field; encode: recorded as the index's default)."),
        click.option("--normalize/--no-normalize", default=None, help="L2-normalise vectors [default: model/preset]."),
        click.option("--dtype", type=click.Choice(["float32", "float16", "bfloat16"]), default=None,
                     help="Model precision [default: float16 on CUDA, float32 on CPU]."),
        click.option("--backend", type=click.Choice(["transformers", "sentence-transformers"]), default=None,
                     help="Run the model through transformers (pooling done by legalir) or sentence-transformers "
                          "[default: transformers unless the model has modules legalir does not reproduce]."),
        click.option("--device", default=None, help="torch device, e.g. cpu, cuda, cuda:1 [default: cuda if present]."),
        click.option("--trust-remote-code", is_flag=True,
                     help="Allow the model repository's own Python code (needed by some encoders)."),
    ])


def encoder_overrides(pooling, max_length, query_format, doc_format, instruction, normalize, dtype, backend,
                      trust_remote_code=False):
    return {"pooling": pooling, "max_length": max_length, "query_format": unescape(query_format),
            "doc_format": unescape(doc_format), "instruction": instruction, "normalize": normalize,
            "dtype": dtype, "backend": backend, "trust_remote_code": trust_remote_code or None}


def generator_options(fn):
    """Options that pick and configure a text generator (legalir.datasets.generate)."""
    return _apply(fn, [
        click.option("--backend", type=click.Choice(["api", "local", "precomputed"]), default="api",
                     show_default=True, help="api: OpenAI-compatible server; local: transformers model folder; "
                                             "precomputed: a JSONL file of generations."),
        click.option("--llm", "llm_model", default=None,
                     help="api: model name [default: $LEGALIR_LLM_MODEL]; local: model folder."),
        click.option("--base-url", default=None,
                     help="api: server base URL [default: $LEGALIR_LLM_BASE_URL, else OpenAI's]."),
        click.option("--generations", type=click.Path(dir_okay=False),
                     help="precomputed: JSONL of {qid, text} ({qid, docid, text} for judges)."),
        click.option("--temperature", default=0.0, show_default=True, help="Sampling temperature."),
        click.option("--max-tokens", default=512, show_default=True, type=click.IntRange(min=1),
                     help="Longest generation, in tokens."),
        click.option("--top-p", default=1.0, show_default=True, help="Nucleus sampling mass."),
        click.option("--gen-seed", default=0, show_default=True, help="Sampling seed (sent to the API too)."),
        click.option("--concurrency", default=4, show_default=True, type=click.IntRange(min=1),
                     help="api: parallel requests."),
        click.option("--max-retries", default=6, show_default=True, type=click.IntRange(min=0),
                     help="api: retries of transient errors."),
        click.option("--cache-dir", default=None, type=click.Path(file_okay=False),
                     help="Generation cache [default: $LEGALIR_CACHE_DIR or cache/generations]."),
        click.option("--no-cache", is_flag=True, help="Do not read or write the generation cache."),
    ])


def make_generator(backend, llm_model, base_url, generations, temperature, max_tokens, top_p, gen_seed,
                   concurrency, max_retries, cache_dir, no_cache):
    """The generator the generator options describe."""
    from legalir.datasets import generate

    sampling = generate.Sampling(temperature=temperature, max_tokens=max_tokens, top_p=top_p, seed=gen_seed)
    cache = False if no_cache else (cache_dir or True)
    if backend == "api":
        return generate.make("api", model=llm_model, sampling=sampling, cache=cache, base_url=base_url,
                             concurrency=concurrency, max_retries=max_retries)
    if backend == "local":
        return generate.make("local", path=llm_model, sampling=sampling, cache=cache)
    return generate.make("precomputed", path=generations)


def fusion_options(fn):
    return _apply(fn, [
        click.option("--method", type=click.Choice(["rrf", "linear"]), default=None,
                     help="Reciprocal rank fusion, or a weighted sum of normalised scores [default: rrf]."),
        click.option("--weights", default=None, help="One weight per run, comma-separated [default: equal]."),
        click.option("--rrf-k", type=float, default=None, help="RRF constant k [default: 60]."),
        click.option("--norm", type=click.Choice(["minmax", "zscore"]), default=None,
                     help="Score normalisation for linear fusion [default: minmax]."),
        click.option("--depth", type=DEPTH, default=None,
                     help="Fuse only each run's top DEPTH documents [default: all]."),
    ])


def _paths(value) -> list[str]:
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return [str(v) for v in value if v is not None]
    return [str(value)]


def force_option(*outputs: str):
    """The one ``--force`` option, and the output rule for the command it decorates.

    The command runs inside :func:`legalir.base.atomic.command`: its inputs are its path arguments and
    options that must exist (``click.Path(exists=True)``, standard input ``-`` aside), so no output
    it writes may be one of them; ``--force`` lets an output replace a file legalir did not write.
    The output files named by the parameters ``outputs`` are checked before the command starts
    (:func:`legalir.base.atomic.check_file`), so a refusal comes before any long work.
    """
    def decorate(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            from legalir.base import atomic

            ctx = click.get_current_context()
            inputs = [v for p in ctx.command.params
                      if isinstance(p.type, click.Path) and p.type.exists for v in _paths(ctx.params.get(p.name))]
            force = bool(kwargs.pop("force", False))
            with atomic.command(inputs, force):
                for name in outputs:
                    for out in _paths(ctx.params.get(name)):
                        atomic.check_file(out)
                return fn(*args, **kwargs)

        return click.option("--force", is_flag=True,
                            help="Replace an existing output file that legalir did not write (an output is never "
                                 "written onto one of the command's inputs).")(wrapper)

    return decorate
