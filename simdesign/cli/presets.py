"""``simdesign presets``: list the built-in models."""
from __future__ import annotations

from simdesign.model import PRESETS, load_model


def cmd_presets(args) -> int:
    for name in PRESETS:
        model = load_model(name)
        means = model.expected_scores("fitted")
        print(f"{name}: {len(model.scale)}-point scale, systems {', '.join(model.systems)}")
        print(f"  effects (latent): {', '.join(f'{s}={b:+.3f}' for s, b in zip(model.systems, model.effects))}")
        print(f"  expected scores:  {', '.join(f'{s}={m:.2f}' for s, m in zip(model.systems, means))}")
        print(f"  source: {model.citation}")
    return 0


def add_parser(sub) -> None:
    """Add the command to the CLI's subparsers."""
    presets = sub.add_parser("presets", help="list the built-in models")
    presets.set_defaults(func=cmd_presets)
