"""Options several commands share: where chunks run (``--backend`` ...) and how a judgement table is read."""
from __future__ import annotations

from simdesign.studies.backends import BACKENDS, DEFAULT_RETRIES


def backend_options(command) -> None:
    """--backend, --scheduler, --workers, --retries: where a command's chunks of trials are computed."""
    command.add_argument("--backend", choices=BACKENDS, default="loky",
                         help="where chunks run: local processes (loky, default), local processes forked from this "
                              "one (fork: no imports per worker; Linux, not for R-backed tests), local threads "
                              "(threading; not for R-backed tests) or a Dask cluster (dask); results are identical")
    command.add_argument("--scheduler", metavar="ADDRESS",
                         help="dask: address of a running scheduler, e.g. tcp://host:8786 (default: a local "
                              "cluster for the run)")
    command.add_argument("--workers", type=int, metavar="N",
                         help="dask: worker processes of the local cluster (default: all cores)")
    command.add_argument("--retries", type=int, default=DEFAULT_RETRIES, metavar="N",
                         help="resubmit unsaved chunks up to N times when workers die (default %(default)s)")


def judgements_options(command) -> None:
    """The judgement table and how to read it: fit, check and reliability."""
    command.add_argument("judgements", help="CSV, one row per judgement: annotator, document, system, score")
    command.add_argument("--columns", help="map column names, e.g. annotator=worker,score=rating")
    command.add_argument("--scale", help="the scale's values, e.g. 1..7 (default: the observed values)")


def method_option(command, default: str = "default: from a score or rank column") -> None:
    """``--method``: a registered annotation method or a plug-in's module:attribute (checked by
    :func:`simdesign.cli.main.option_problems`, which names the closest registered one)."""
    from simdesign.methods import method_names

    command.add_argument("--method", metavar="METHOD",
                         help=f"{' | '.join(method_names())} (or module:attribute of your own); {default}")
