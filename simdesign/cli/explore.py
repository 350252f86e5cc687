"""``simdesign explore``: the design explorer, a local web application for teaching (``simdesign.explore``).

Registered in :mod:`simdesign.cli` by :func:`add_parser`. Flask is an optional extra (``pip install -e
'.[explore]'``), imported only when the command runs.
"""
from __future__ import annotations

import socket
import sys
from pathlib import Path

from simdesign.core.errors import ConfigError, MissingBackendError


def add_parser(subparsers) -> None:
    """Add the ``explore`` subcommand to the CLI's subparsers."""
    parser = subparsers.add_parser(
        "explore", help="a local web page to try designs and tests: design picture, totals and cost, type I error "
                        "and power computed live (offline; Ctrl-C stops it)")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine "
                                                            "only)")
    parser.add_argument("--port", type=int, default=8050, help="port (default 8050; 0: any free port)")
    parser.add_argument("--workers", type=int, default=2,
                        help="worker processes computing trials (default 2; 0: in the server process)")
    parser.add_argument("--figures", help="folder of the precomputed curves <name>.csv (default: the tables shipped "
                                          "with the package, i.e. the committed figures/*.csv)")
    parser.add_argument("--model", action="append", default=[], metavar="FILE",
                        help="a model file (e.g. from 'simdesign fit') the page offers beside the presets, under its "
                             "file name without .yaml; repeatable. The page can name no other file: the server "
                             "opens only these")
    parser.set_defaults(func=cmd_explore)


def served_models(paths: list[str]) -> dict[str, Path]:
    """``--model`` files by name (the file name without its suffix), each checked to load as a model now."""
    from simdesign.model import PRESETS, load_model

    models: dict[str, Path] = {}
    for given in paths:
        path = Path(given).resolve()
        load_model(str(path))  # a bad file is refused before the server starts (ConfigError: exit 2)
        name = path.stem
        if name in PRESETS or name in models:
            raise ConfigError(f"The '--model' file {given} would be offered as {name!r}, which already names "
                              f"{'a preset' if name in PRESETS else 'another --model file'}; rename the file")
        models[name] = path
    return models


def check_host(host: str, port: int) -> None:
    """Refuse a --host that is no address (werkzeug would print the resolver's words and exit 1)."""
    try:
        socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise ConfigError(f"The '--host' option {host!r} is not an address or name this machine can listen on "
                          f"({exc}); use e.g. 127.0.0.1 (this machine only) or 0.0.0.0 (every network "
                          "interface)") from None


def cmd_explore(args) -> int:
    if not 0 <= args.port <= 65535:
        raise ConfigError(f"The '--port' option must be between 0 and 65535; got {args.port}")
    if args.workers < 0:
        raise ConfigError(f"The '--workers' option must be 0 or more; got {args.workers}")
    if args.figures is not None and not Path(args.figures).is_dir():
        raise ConfigError(f"The '--figures' option must be a folder of curve tables (<name>.csv); {args.figures} "
                          f"{'is a file' if Path(args.figures).exists() else 'does not exist'}")
    try:
        from werkzeug.serving import make_server

        from simdesign.explore.app import QuietRequestHandler, create_app
    except ImportError as exc:
        raise MissingBackendError(
            f"simdesign explore needs Flask ({exc}); install the 'explore' extra: pip install -e '.[explore]' "
            "(bash scripts/setup.sh installs it)") from exc
    from simdesign.explore import curves

    check_host(args.host, args.port)
    figures = Path(args.figures) if args.figures else curves.DEFAULT_FIGURES
    app = create_app(workers=args.workers, figures_dir=figures, models=served_models(args.model))
    try:
        # no log line per poll; requests answered with an error, and the server's own errors, are still logged
        server = make_server(args.host, args.port, app, threaded=True, request_handler=QuietRequestHandler)
    except OSError as exc:
        raise ConfigError(f"Cannot listen on {args.host}:{args.port} (--host, --port): {exc}") from exc
    pool = app.extensions["simdesign_pool"]
    pool.start()  # the workers import the engine while the page loads
    host = f"[{args.host}]" if ":" in args.host else args.host
    print(f"simdesign explorer at http://{host}:{server.server_port}/ (Ctrl-C stops it)", flush=True)
    try:
        server.serve_forever()
    finally:
        server.server_close()
        pool.close()
        print("explorer stopped", file=sys.stderr)
    return 0
